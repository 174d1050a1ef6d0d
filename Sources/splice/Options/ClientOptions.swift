import Foundation
import SpliceWire
import SpliceClient

/// The flags of every command that talks to the coordinator's API (`submit`, `status`, `jobs`,
/// `cancel`, `workers`): where it listens, the CURVE keys of a protected API, how long to wait.
struct ClientOptions: OptionGroup {
    static let coordinator = Option<String>("coordinator", valueName: "endpoint",
        help: "The coordinator's API endpoint; with standby coordinators, each one's, comma-separated "
            + "(tcp://a:7451,tcp://b:7451): a standby answers reads and sends writes to the active one.",
        default: "tcp://127.0.0.1:7451", environment: "SPLICE_COORDINATOR")
    static let secretKey = Option<String>("secret-key", valueName: "file",
        help: "This client's CURVE secret key (from `splice keys generate`), for a coordinator run with "
            + "--secret-key; its public key must be in the coordinator's --admin-keys.",
        environment: "SPLICE_CLIENT_SECRET_KEY")
    static let serverKey = Option<String>("server-key", valueName: "file",
        help: "The coordinator's public key: its .pub file (or the Z85 text). Needed with --secret-key. Several "
            + "coordinators share one, or give each one's, comma-separated, in --coordinator's order.",
        environment: "SPLICE_SERVER_KEY")
    static let timeout = Option<Seconds>("timeout", valueName: "seconds",
        help: "How long to wait for the coordinator to answer each request.", default: Seconds(milliseconds: 10_000))

    static let arguments: [any ArgumentDeclaration] = [coordinator, secretKey, serverKey, timeout]

    var coordinator: String
    var secretKeyPath: String?
    var serverKey: String?
    var timeout: Seconds

    init(_ arguments: ParsedArguments) throws {
        coordinator = try arguments.value(Self.coordinator)
        secretKeyPath = arguments[Self.secretKey]
        serverKey = arguments[Self.serverKey]
        timeout = try arguments.value(Self.timeout)
    }

    /// Checks what can be checked without the network; the commands call it from `validate()`.
    func validate() throws {
        let schemes = ["tcp://", "ipc://"]
        let endpoints = Self.list(coordinator)
        guard !endpoints.isEmpty else {
            throw UsageError("--coordinator: '\(coordinator)' names no endpoint; expected tcp://HOST:7451 "
                             + "(the coordinator's --api-endpoint), or several, comma-separated")
        }
        for endpoint in endpoints where !(schemes.contains(where: endpoint.hasPrefix) && endpoint.count > 6) {
            throw UsageError("--coordinator: '\(endpoint)' is not an endpoint like tcp://HOST:7451 "
                             + "(the coordinator's --api-endpoint)")
        }
        if let serverKey, Self.list(serverKey).count > 1, Self.list(serverKey).count != endpoints.count {
            throw UsageError("--server-key: \(Self.list(serverKey).count) keys for \(endpoints.count) coordinators; "
                             + "give one key they share, or one per --coordinator endpoint in the same order")
        }
        switch (secretKeyPath, serverKey) {
        case (.some, nil):
            throw UsageError("--secret-key (or SPLICE_CLIENT_SECRET_KEY) needs --server-key (or SPLICE_SERVER_KEY), "
                             + "the coordinator's .pub file, to check whom it talks to")
        case (nil, .some):
            throw UsageError("--server-key (or SPLICE_SERVER_KEY) needs --secret-key (or SPLICE_CLIENT_SECRET_KEY): "
                             + "a CURVE client must present a key of its own")
        default:
            break
        }
    }

    /// The `SpliceClient` configuration, with the key files read. Unreadable or unsafe key files
    /// are usage errors naming the flag.
    func clientConfiguration() throws -> SpliceClientConfiguration {
        var configuration = SpliceClientConfiguration(endpoint: coordinator, timeout: timeout.duration)
        configuration.attemptTimeout = min(configuration.attemptTimeout, timeout.duration)
        if let secretKeyPath, let serverKey {
            let keys: CurveKeyPair
            do {
                keys = try CurveKeyPair.load(secretKeyPath: secretKeyPath)
            } catch {
                throw UsageError("--secret-key: " + error.message)
            }
            let servers = try Self.list(serverKey).map { try Self.publicKey($0, flag: "--server-key") }
            guard let first = servers.first else { throw UsageError("--server-key names no key") }
            configuration.security = .curve(clientKeys: keys, serverKey: first)
            if servers.count > 1 { configuration.serverKeys = servers }
        }
        return configuration
    }

    /// Connects, runs `body` with the client, and closes it whatever happens.
    func withClient<Result: Sendable>(_ body: (SpliceClient) async throws -> Result) async throws -> Result {
        let client = try await SpliceClient.connect(try clientConfiguration())
        do {
            let result = try await body(client)
            await client.close()
            return result
        } catch {
            await client.close()
            throw error
        }
    }

    /// `a, b,c` → `["a", "b", "c"]` (a flag that takes one value per coordinator).
    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A public key given as 40 characters of Z85 or as the path of a `.pub` file; `flag` names
    /// the argument in the usage error.
    static func publicKey(_ text: String, flag: String) throws -> CurvePublicKey {
        if let key = try? CurvePublicKey(z85: text) { return key }
        do {
            return try CurvePublicKey.load(path: text)
        } catch {
            throw UsageError("\(flag): '\(text)' is neither a public key (40 characters of Z85) nor a readable .pub "
                             + "file (\(error.message))")
        }
    }
}

/// A command that talks to the coordinator's API, configured by its `ClientOptions`.
protocol ClientCommand: Command {
    var client: ClientOptions { get }
}

extension ClientCommand {
    /// Checks the client flags. Commands with more to check call `client.validate()` themselves.
    func validate() throws {
        try client.validate()
    }
}

/// A number of seconds as people type it: `10`, `2.5`, `0.25` (to the millisecond, exactly).
struct Seconds: ArgumentValue, CustomStringConvertible, Equatable {
    var milliseconds: Int

    init(milliseconds: Int) {
        self.milliseconds = milliseconds
    }

    init(argument: String) throws {
        let parts = argument.split(separator: ".", omittingEmptySubsequences: false)
        let expected = InvalidArgumentValue(expected: "a number of seconds from 0.001 to 86400, like 10 or 2.5")
        guard (1...2).contains(parts.count), let whole = Int(parts[0]), whole >= 0, whole <= 86_400,
              parts.count == 1 || ((1...3).contains(parts[1].count) && parts[1].allSatisfy(\.isASCIIDigit))
        else { throw expected }
        var fraction = parts.count == 2 ? String(parts[1]) : ""
        while fraction.count < 3 { fraction += "0" }
        milliseconds = whole * 1000 + Int(fraction)!
        guard milliseconds > 0, milliseconds <= 86_400_000 else { throw expected }
    }

    var duration: Duration { .milliseconds(milliseconds) }

    /// `10`, `2.5`, `0.025`.
    var description: String {
        var fraction = String(milliseconds % 1000)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return String(milliseconds / 1000) + (fraction.isEmpty ? "" : "." + fraction)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
