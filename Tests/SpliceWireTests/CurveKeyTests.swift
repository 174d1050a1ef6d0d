import Foundation
import SpliceWire
import Testing

@Suite("CURVE keys and key files")
struct CurveKeyTests {
    @Test("Z85 matches the RFC 32 test vector")
    func rfcVector() throws {
        // ZeroMQ RFC 32: 86 4F D2 6F B5 59 F7 5B encodes as "HelloWorld". Keys are 32 bytes, so
        // repeat it four times.
        let bytes = Data(Array(repeating: [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B] as [UInt8], count: 4).joined())
        let key = try CurvePublicKey(bytes: bytes)
        #expect(key.z85 == String(repeating: "HelloWorld", count: 4))
        #expect(try CurvePublicKey(z85: key.z85) == key)
    }

    @Test("generated pairs round-trip through Z85 and the public key derives from the secret")
    func generate() throws {
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey.z85.count == 40)
        #expect(pair.secretKey.z85.count == 40)
        #expect(try CurvePublicKey(z85: pair.publicKey.z85) == pair.publicKey)
        #expect(try CurveSecretKey(z85: pair.secretKey.z85) == pair.secretKey)
        #expect(try pair.secretKey.derivePublicKey() == pair.publicKey)
        #expect(try CurveKeyPair.generate() != pair)
        #expect(!"\(pair.secretKey)".contains(pair.secretKey.z85))
    }

    @Test("malformed key text is refused", arguments: [
        "", "short", String(repeating: "a", count: 39), String(repeating: "a", count: 41),
        String(repeating: "a", count: 35) + "\"\"\"\"\"", String(repeating: "é", count: 40),
    ])
    func malformed(text: String) {
        #expect(throws: WireError.self) { try CurvePublicKey(z85: text) }
        #expect(throws: WireError.self) { try CurveSecretKey(z85: text) }
    }

    @Test("public keys encode in JSON as their Z85 text")
    func codable() throws {
        let key = try CurveKeyPair.generate().publicKey
        let data = try JSONEncoder().encode([key])
        #expect(String(decoding: data, as: UTF8.self).contains(key.z85.replacingOccurrences(of: "/", with: "\\/")))
        #expect(try JSONDecoder().decode([CurvePublicKey].self, from: data) == [key])
    }

    private func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "splice-keys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("saved keys load back; the secret file is 0600, the public 0644, nothing else is left")
    func files() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try CurveKeyPair.generate()
        let secret = directory + "/worker.key"
        let `public` = directory + "/worker.pub"
        try pair.save(secretKeyPath: secret, publicKeyPath: `public`)

        #expect(try mode(secret) == 0o600)
        #expect(try mode(`public`) == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["worker.key", "worker.pub"])
        #expect(try CurveKeyPair.load(secretKeyPath: secret) == pair)
        #expect(try CurvePublicKey.load(path: `public`) == pair.publicKey)
        // The public file's key line can be pasted as is.
        let lines = try String(contentsOfFile: `public`, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0 == pair.publicKey.z85 })
    }

    @Test("`splice keys generate` creates missing directories privately")
    func generateIntoNewDirectory() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = directory + "/etc/splice"
        let pair = try CurveKeyPair.generate(savingSecretKeyTo: keys + "/worker.key", publicKeyTo: keys + "/worker.pub")
        #expect(try mode(keys) == 0o700)
        #expect(try mode(keys + "/worker.key") == 0o600)
        #expect(try CurveKeyPair.load(secretKeyPath: keys + "/worker.key") == pair)
    }

    @Test("existing key files are kept unless overwriting is asked for")
    func noOverwrite() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try CurveKeyPair.generate()
        let second = try CurveKeyPair.generate()
        let secret = directory + "/k.key"
        let `public` = directory + "/k.pub"
        try first.save(secretKeyPath: secret, publicKeyPath: `public`)
        #expect(throws: WireError.self) { try second.save(secretKeyPath: secret, publicKeyPath: `public`) }
        #expect(try CurveKeyPair.load(secretKeyPath: secret) == first)
        try second.save(secretKeyPath: secret, publicKeyPath: `public`, overwrite: true)
        #expect(try CurveKeyPair.load(secretKeyPath: secret) == second)
        #expect(try mode(secret) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == 2)
    }

    @Test("a secret key file readable by others is refused")
    func insecureSecret() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secret = directory + "/k.key"
        try CurveKeyPair.generate().save(secretKeyPath: secret, publicKeyPath: directory + "/k.pub")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: secret)
        do {
            _ = try CurveKeyPair.load(secretKeyPath: secret)
            Issue.record("loaded a world-readable secret key")
        } catch {
            #expect(error.code == .insecureKeyFile)
        }
    }

    @Test("missing and malformed key files fail with key-file / invalid-key")
    func badFiles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            _ = try CurvePublicKey.load(path: directory + "/absent.pub")
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.code == .keyFile)
        }
        let junk = directory + "/junk.pub"
        try "# comment only\n\n".write(toFile: junk, atomically: true, encoding: .utf8)
        do {
            _ = try CurvePublicKey.load(path: junk)
            Issue.record("loaded a file with no key")
        } catch {
            #expect(error.code == .invalidKey)
        }
    }
}
