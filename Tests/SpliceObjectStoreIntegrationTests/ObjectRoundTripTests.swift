import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

/// What a user puts is what they get back: PUT, GET whole and by range, HEAD, DELETE, and the
/// reader's random and sequential reads, against moto with authentication on.
@Suite("Object store: put, get, ranges, head", .serialized)
struct ObjectRoundTripTests {
    @Test("a PUT object reads back whole and by range; HEAD has its size; absent objects say so")
    func putGetHead() async throws {
        let s3 = try await S3Fixture.make()
        let bytes = S3Fixture.bytes(300_001)
        let location = try s3.location("clips/in.bin")
        #expect(try await s3.store.info(location) == nil)
        let written = try await s3.store.put(bytes, at: location, overwrite: false, contentType: "video/mp4")
        #expect(written.size == 300_001)

        let info = try #require(try await s3.store.info(location))
        #expect(info.size == 300_001)
        #expect(info.etag != nil && info.etag == written.etag)
        #expect(info.contentType == "video/mp4")
        #expect(try await s3.store.get(location) == bytes)
        #expect(try await s3.store.get(location, range: 0..<1) == [bytes[0]])
        #expect(try await s3.store.get(location, range: 1000..<70_000) == Array(bytes[1000..<70_000]))
        #expect(try await s3.store.get(location, range: 299_990..<300_001) == Array(bytes[299_990...]))

        let missing = try s3.location("clips/missing.bin")
        let error = await #expect(throws: ObjectStoreError.self) { try await s3.store.get(missing) }
        #expect(error?.code == .notFound)
        #expect(error?.isRetryable == false)
        #expect(error?.message.contains("s3://\(s3.bucket)/clips/missing.bin") == true)

        try await s3.store.delete(location)
        #expect(try await s3.store.info(location) == nil)
    }

    @Test("keys are names, not paths: spaces, unicode, +, %, ?, #, ./.., // and a 1,024-byte key round-trip")
    func awkwardKeys() async throws {
        let s3 = try await S3Fixture.make()
        let keys = ["with space/and+plus.mp4", "ünïcødé/日本語.mov", "percent%20not-decoded", "q?x=1#frag",
                    "a/../b/./c", "double//slash", "trailing/", "~tilde_(parens)!*'", String(repeating: "k", count: 1024)]
        for (index, key) in keys.enumerated() {
            let location = try s3.location(key)
            let bytes = S3Fixture.bytes(100 + index, seed: UInt64(index))
            try await s3.store.put(bytes, at: location, overwrite: false)
            #expect(try await s3.store.get(location) == bytes, "\(key)")
            #expect(try await s3.store.info(location)?.size == Int64(100 + index), "\(key)")
        }
        // Distinct keys stayed distinct objects (nothing was normalised into another).
        #expect(try await s3.store.info(s3.location("b/c")) == nil)
        #expect(try await s3.store.info(s3.location("double/slash")) == nil)
    }

    @Test("the reader serves random reads and a sequential read, byte for byte")
    func reader() async throws {
        let s3 = try await S3Fixture.make { $0.readAheadBytes = 1 << 20 }
        let bytes = await S3Fixture.bytesOffPool(5 << 20 + 12_345, seed: 7)
        let location = try s3.location("reader.bin")
        try await s3.store.put(bytes, at: location, overwrite: false)
        let reader = try await s3.store.openReader(location)
        #expect(reader.size == Int64(bytes.count))

        var generator = SplitMix64(seed: 3)
        for _ in 0..<40 {
            let offset = Int.random(in: 0..<bytes.count, using: &generator)
            let count = Int.random(in: 1...300_000, using: &generator)
            let got = try await reader.read(at: Int64(offset), count: count)
            #expect(got == Array(bytes[offset..<min(bytes.count, offset + count)]), "read \(count) at \(offset)")
        }
        // Sequential, in odd-sized reads (as FFmpeg's 32 KiB AVIO buffer would, but not aligned).
        var sequential: [UInt8] = []
        while sequential.count < bytes.count {
            sequential += try await reader.read(at: Int64(sequential.count), count: 77_777)
        }
        #expect(S3Fixture.same(sequential, bytes))
        #expect(try await reader.read(at: Int64(bytes.count), count: 10).isEmpty, "nothing past the end")
    }

    @Test("a sequential read is one streaming GET; a seek back is one more; a GET cut midway resumes where it broke")
    func streaming() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint) { $0.readAheadBytes = 512 << 10 }
        let bytes = S3Fixture.bytes(3 << 20, seed: 5)
        let location = try s3.location("stream.bin")
        try await s3.store.put(bytes, at: location, overwrite: false)
        func gets() throws -> [String] { try tap.records().filter { $0.method == "GET" }.compactMap { $0.header("Range") } }

        let reader = try await s3.store.openReader(location)
        var sequential: [UInt8] = []
        while sequential.count < bytes.count { sequential += try await reader.read(at: Int64(sequential.count), count: 65_536) }
        #expect(S3Fixture.same(sequential, bytes))
        #expect(try gets() == ["bytes=0-3145727"], "one request for the whole sequential read")
        #expect(try await reader.read(at: 10, count: 5) == Array(bytes[10..<15]))
        #expect(try gets().count == 2, "a seek far back starts one more GET there")
        #expect(try gets().last == "bytes=10-3145727")

        try await tap.fail("GET", status: 1, count: 1)  // the next GET breaks halfway through its body
        let resumed = try await s3.store.openReader(location)
        var again: [UInt8] = []
        while again.count < bytes.count { again += try await resumed.read(at: Int64(again.count), count: 100_000) }
        #expect(S3Fixture.same(again, bytes))
        let after = try gets().dropFirst(2)
        #expect(after.count == 2 && after.first == "bytes=0-3145727")
        #expect(after.last != "bytes=0-3145727" && after.last?.hasSuffix("-3145727") == true, "resumed past 0: \(after)")
    }

    @Test("the blocking read from a thread of its own fills a caller's buffer")
    func blockingRead() async throws {
        let s3 = try await S3Fixture.make { $0.readAheadBytes = 256 << 10 }
        let bytes = S3Fixture.bytes(1 << 20, seed: 11)
        let location = try s3.location("blocking.bin")
        try await s3.store.put(bytes, at: location, overwrite: false)
        let reader = try await s3.store.openReader(location)
        let copy = try await ExternalTool.offPool { () throws -> [UInt8] in
            var out = [UInt8](repeating: 0, count: bytes.count)
            var filled = 0
            while filled < out.count {
                let n = try out.withUnsafeMutableBytes { raw in
                    try reader.readBlocking(at: Int64(filled), into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
                }
                if n == 0 { break }
                filled += n
            }
            return out
        }
        #expect(S3Fixture.same(copy, bytes))
    }

    @Test("an object replaced while being read fails with object-changed instead of mixing versions")
    func replacedMidRead() async throws {
        let s3 = try await S3Fixture.make { $0.readAheadBytes = 256 << 10 }
        let location = try s3.location("changing.bin")
        try await s3.store.put(S3Fixture.bytes(2 << 20, seed: 1), at: location, overwrite: false)
        let reader = try await s3.store.openReader(location)
        _ = try await reader.read(at: 0, count: 1000)
        try await s3.store.put(S3Fixture.bytes(2 << 20, seed: 2), at: location, overwrite: true)
        let error = await #expect(throws: ObjectStoreError.self) {
            _ = try await reader.read(at: 1 << 20, count: 1000)
        }
        #expect(error?.code == .objectChanged)
    }
}
