import Foundation
import SpliceWire
import Testing

/// docs/protocol.md and docs/deploy.md against the protocols this build speaks: what an integrator
/// or an operator reads about names, versions and ports is what the code does.
@Suite("The protocol docs")
struct ProtocolDocsTests {
    static let docs = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "docs")

    /// Every protocol with its version, from the code.
    static let protocols: [(name: String, version: Int)] = [
        (WorkerMessage.protocolName, WorkerMessage.protocolVersion),
        (APIRequest.protocolName, APIRequest.protocolVersion),
        (DataMessage.protocolName, DataMessage.protocolVersion),
    ]

    static func text(_ file: String) throws -> String {
        try String(contentsOf: docs.appending(path: file), encoding: .utf8)
    }

    @Test("protocol.md's table names every protocol once, with the version this build speaks")
    func protocolTable() throws {
        let text = try Self.text("protocol.md")
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("| `splice-") }
        for (name, version) in Self.protocols {
            let row = rows.filter { $0.hasPrefix("| `\(name)`") }
            #expect(row.count == 1, "\(name): \(row)")
            #expect(row.first?.split(separator: "|").dropFirst().first?.trimmingCharacters(in: .whitespaces)
                        == "\(version)", "\(name): \(row)")
        }
        #expect(rows.count == Self.protocols.count)
        let count = ["One", "Two", "Three", "Four"][Self.protocols.count - 1]
        #expect(text.contains("\(count) protocols, each versioned on its own"))
    }

    @Test("every `splice-x` N in protocol.md and deploy.md is the version this build speaks", arguments: ["protocol.md", "deploy.md"])
    func versions(file: String) throws {
        let text = try Self.text(file)
        let mentions = text.matches(of: #/`(splice-[a-z]+)` ([0-9]+)/#)
        #expect(!mentions.isEmpty)
        for mention in mentions {
            let name = String(mention.output.1), version = Int(mention.output.2)
            guard let expected = Self.protocols.first(where: { $0.name == name }) else { continue }
            #expect(version == expected.version, "\(file): `\(name)` \(version ?? -1), this build speaks \(expected.version)")
        }
    }

    @Test("deploy.md's ports are one table, every endpoint in it")
    func portsTable() throws {
        let text = try Self.text("deploy.md")
        let section = try #require(text.range(of: "## Ports and endpoints"))
        let lines = text[section.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .drop { !$0.hasPrefix("|") }
        let table = lines.prefix { $0.hasPrefix("|") }
        let ports = table.compactMap { row in Int(row.split(separator: "|").first?.trimmingCharacters(in: .whitespaces) ?? "") }
        #expect(ports == [7450, 7451, 7452, 9450, 9451], "the table's rows, up to the first line that is not one")
    }
}
