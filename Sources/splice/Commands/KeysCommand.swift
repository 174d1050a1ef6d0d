import Foundation
import SpliceWire

/// `splice keys`: CURVE key pairs for the coordinator, workers and API clients.
struct KeysCommand: Command {
    static let configuration = CommandConfiguration(
        name: "keys", abstract: "Create CURVE key pairs for the cluster.", subcommands: [KeysGenerateCommand.self])

    init(_ arguments: ParsedArguments) {}
}

/// `splice keys generate NAME [--force]`: writes NAME.key (secret, mode 0600) and NAME.pub.
struct KeysGenerateCommand: Command {
    static let name = Positional<String>("name",
        help: "Where to write: NAME.key and NAME.pub (a path without extension, e.g. /etc/splice/coordinator).") { $0 }
    static let force = Flag("force", help: "Replace an existing key pair (whatever uses the old one stops working).")

    static let configuration = CommandConfiguration(
        name: "generate", abstract: "Write a new key pair: NAME.key (secret, mode 0600) and NAME.pub.",
        discussion: """
            Give the coordinator's .pub to the workers (--server-key) and API clients; enroll each \
            worker's .pub on the coordinator (`splice workers enroll NAME.pub`); list API clients' \
            .pub files in the coordinator's --admin-keys. The .key file never leaves its machine.
            """,
        arguments: [name, force])

    let name: String
    let force: Bool

    init(_ arguments: ParsedArguments) throws {
        name = try arguments.value(Self.name)
        force = arguments[Self.force]
    }

    func validate() throws {
        let base = URL(fileURLWithPath: name).lastPathComponent
        guard !name.hasSuffix("/"), !base.isEmpty, base != ".", base != ".." else {
            throw UsageError("<name>: '\(name)' names a folder; give a file name without extension, like "
                             + "\(name.hasSuffix("/") ? name : name + "/")worker1")
        }
        for suffix in [".key", ".pub"] where name.hasSuffix(suffix) {
            throw UsageError("<name>: give '\(name.dropLast(suffix.count))' without \(suffix); "
                             + "the command writes both NAME.key and NAME.pub")
        }
    }

    var secretKeyPath: String { name + ".key" }
    var publicKeyPath: String { name + ".pub" }

    func run(_ context: CommandContext) async throws -> ExitCode {
        // Checked for both files before writing either, so a refusal never leaves a new secret key
        // beside an old public key.
        if !force {
            for path in [secretKeyPath, publicKeyPath] where FileManager.default.fileExists(atPath: path) {
                throw KeysError("\(path) already exists; keep it, or pass --force to replace the key pair "
                                + "(whatever uses the old key stops working)")
            }
        }
        let pair: CurveKeyPair
        do {
            pair = try CurveKeyPair.generate(savingSecretKeyTo: secretKeyPath, publicKeyTo: publicKeyPath,
                                             overwrite: force)
        } catch {
            throw KeysError(error.message)
        }
        context.output.writeLine("wrote \(secretKeyPath) (secret, mode 0600) and \(publicKeyPath)")
        context.output.writeLine("public key: \(pair.publicKey.z85)")
        return .success
    }
}

/// A key file could not be written; the message says which and what to do.
struct KeysError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
