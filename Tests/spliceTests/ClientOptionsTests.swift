import Foundation
import SpliceWire
import Testing

@testable import splice

/// The shared client flags (`--coordinator`, `--secret-key`, `--server-key`, `--timeout`) and
/// the KEY argument: parsing and checks, no network.
@Suite("Client options")
struct ClientOptionsTests {
    /// A job id as `splice submit` prints it.
    let job = "7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c"

    @Test("defaults, then SPLICE_* variables, then flags")
    func sources() throws {
        let plain = try parse([job], as: StatusCommand.self)
        #expect(plain.client.coordinator == "tcp://127.0.0.1:7451")
        #expect(plain.client.timeout == Seconds(milliseconds: 10_000))
        #expect(plain.client.secretKeyPath == nil && plain.client.serverKey == nil)

        let environment = ["SPLICE_COORDINATOR": "tcp://10.0.0.5:7451", "SPLICE_CLIENT_SECRET_KEY": "/k/client.key",
                           "SPLICE_SERVER_KEY": "/k/coordinator.pub"]
        let fromEnvironment = try parse([job], as: StatusCommand.self, environment: environment)
        #expect(fromEnvironment.client.coordinator == "tcp://10.0.0.5:7451")
        #expect(fromEnvironment.client.secretKeyPath == "/k/client.key")
        #expect(fromEnvironment.client.serverKey == "/k/coordinator.pub")

        let flags = try parse([job, "--coordinator", "tcp://c:9", "--timeout", "2.5"], as: StatusCommand.self,
                              environment: environment)
        #expect(flags.client.coordinator == "tcp://c:9")
        #expect(flags.client.timeout.duration == .milliseconds(2500))
    }

    @Test("--timeout takes seconds to the millisecond", arguments: [
        ("10", 10_000), ("2.5", 2_500), ("0.25", 250), ("0.001", 1), ("86400", 86_400_000),
    ])
    func timeouts(word: String, milliseconds: Int) throws {
        let seconds = try Seconds(argument: word)
        #expect(seconds.milliseconds == milliseconds)
        #expect(try Seconds(argument: seconds.description) == seconds)
    }

    @Test("--timeout refuses what is not a positive number of seconds",
          arguments: ["0", "-1", "abc", "1.2345", "1.", "", "86401"])
    func badTimeouts(word: String) {
        #expect(usageError([job, "--timeout", word], for: StatusCommand.self)?.hasPrefix("--timeout: '") == true)
    }

    @Test("keys come in pairs, and the endpoint must look like one", arguments: [
        (["--secret-key", "c.key"], "--secret-key (or SPLICE_CLIENT_SECRET_KEY) needs --server-key"),
        (["--server-key", "s.pub"], "--server-key (or SPLICE_SERVER_KEY) needs --secret-key"),
        (["--coordinator", "localhost:7451"], "--coordinator: 'localhost:7451' is not an endpoint"),
        (["--coordinator", "tcp://"], "--coordinator: 'tcp://' is not an endpoint"),
    ])
    func combinations(words: [String], message: String) {
        let error = usageError([job] + words, for: StatusCommand.self)
        #expect(error?.hasPrefix(message) == true, "got: \(error ?? "no error")")
    }

    @Test("key files: loaded into a CURVE configuration; unsafe or missing ones name the flag")
    func keyFiles() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try CurveKeyPair.generate(savingSecretKeyTo: directory + "/client.key",
                                               publicKeyTo: directory + "/client.pub")
        let server = try CurveKeyPair.generate(savingSecretKeyTo: directory + "/server.key",
                                               publicKeyTo: directory + "/server.pub")
        let command = try parse([job, "--secret-key", directory + "/client.key", "--server-key",
                                 directory + "/server.pub", "--timeout", "1"], as: StatusCommand.self)
        let configuration = try command.client.clientConfiguration()
        #expect(configuration.security == .curve(clientKeys: client, serverKey: server.publicKey))
        #expect(configuration.timeout == .seconds(1))
        #expect(configuration.attemptTimeout == .seconds(1))

        // The server key as Z85 text works as well as its file.
        let inline = try parse([job, "--secret-key", directory + "/client.key", "--server-key",
                                server.publicKey.z85], as: StatusCommand.self)
        #expect(try inline.client.clientConfiguration().security
            == .curve(clientKeys: client, serverKey: server.publicKey))

        chmod(directory + "/client.key", 0o644)
        #expect(configurationError(command)?.hasPrefix("--secret-key: secret key file") == true)
        let missing = try parse([job, "--secret-key", directory + "/none.key", "--server-key",
                                 directory + "/server.pub"], as: StatusCommand.self)
        #expect(configurationError(missing)?.hasPrefix("--secret-key: cannot read key file") == true)
    }

    @Test("KEY is Z85 text or a .pub file")
    func workerKeys() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try CurveKeyPair.generate(savingSecretKeyTo: directory + "/w.key", publicKeyTo: directory + "/w.pub")
        #expect(try parse([pair.publicKey.z85], as: WorkersEnrollCommand.self).key == pair.publicKey)
        #expect(try parse([directory + "/w.pub", "--name", "w1"], as: WorkersEnrollCommand.self).name == "w1")
        #expect(try parse([directory + "/w.pub"], as: WorkersRevokeCommand.self).key == pair.publicKey)
        let error = usageError(["not-a-key"], for: WorkersRevokeCommand.self)
        #expect(error?.hasPrefix(
            "<key>: 'not-a-key' is neither a public key (40 characters of Z85) nor a readable .pub file") == true)
    }

    @Test("--state and --limit of `jobs` are checked before anything is sent")
    func jobsFlags() throws {
        #expect(try parse(["--state", "failed", "--limit", "5"], as: JobsCommand.self).state == .failed)
        #expect(usageError(["--state", "done"], for: JobsCommand.self)?
            .hasPrefix("--state: 'done' is not one of queued,") == true)
        #expect(usageError(["--limit", "0"], for: JobsCommand.self) == "--limit must be from 1 to 1000; got 0")
    }

    private func configurationError(_ command: StatusCommand) -> String? {
        do {
            _ = try command.client.clientConfiguration()
            return nil
        } catch let error as UsageError {
            return error.message
        } catch {
            return "not a usage error: \(error)"
        }
    }
}

/// A fresh folder under /tmp for one test.
func temporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("splice-client-\(UUID().uuidString.prefix(8))").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
