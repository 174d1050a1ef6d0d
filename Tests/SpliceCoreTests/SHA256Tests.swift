import Foundation
import SpliceCore
import Testing

/// SHA-256 against FIPS 180-4's published examples and `sha256sum`'s answers.
@Suite("SHA-256: the published test vectors")
struct SHA256Tests {
    @Test("one-block, two-block and empty messages give the FIPS 180-4 digests")
    func vectors() {
        #expect(SHA256.hexDigest(of: Array("abc".utf8))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(of: Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hexDigest(of: [UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // One million "a" (`printf 'a%.0s' {1..1000000} | sha256sum`).
        #expect(SHA256.hexDigest(of: [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("hashing in pieces of any size equals hashing at once, across block boundaries")
    func pieces() {
        let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = SHA256.digest(of: message)
        for size in [1, 55, 56, 63, 64, 65, 127, 999] {
            var hasher = SHA256()
            var index = 0
            while index < message.count {
                hasher.update(message[index..<min(message.count, index + size)])
                index += size
            }
            #expect(hasher.finalize() == whole, "pieces of \(size)")
        }
    }
}

extension SHA256Tests {
    @Test("a copy of a hasher goes on from where the original was, each on its own")
    func copies() {
        let head = Array("The quick brown fox ".utf8), one = Array("jumps".utf8), other = Array("sleeps".utf8)
        var original = SHA256()
        original.update(head)
        var copy = original
        copy.update(other)
        original.update(one)
        let spare = original
        #expect(original.finalize() == SHA256.digest(of: head + one))
        #expect(copy.finalize() == SHA256.digest(of: head + other))
        #expect(spare.finalize() == SHA256.digest(of: head + one))
        // A sequence without contiguous storage, longer than the chunks it is hashed in.
        let lazy = (0..<10_000).lazy.map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(SHA256.digest(of: lazy) == SHA256.digest(of: Array(lazy)))
    }
}

@Suite("File checksums")
struct FileChecksumTests {
    @Test("a file of several read buffers hashes to what sha256sum says; a missing file is a clear error")
    func fileAgainstSha256sum() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("splice-sha-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // 2.5 MiB of varied bytes: three reads of the 1 MiB buffer, the last one short.
        let bytes = (0..<(5 << 19)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 11) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let expected = try #require(output.split(separator: " ").first.map(String.init))
        #expect(try FileChecksum.sha256(ofFileAt: path).bytes == SHA256.digest(of: bytes))
        #expect(SHA256.hex(try FileChecksum.sha256(ofFileAt: path).bytes) == expected)
        let missing = #expect(throws: FileChecksumError.self) { try FileChecksum.sha256(ofFileAt: path + ".gone") }
        #expect(missing?.message.contains(".gone") == true && missing?.isRetryable == true)
    }
}
