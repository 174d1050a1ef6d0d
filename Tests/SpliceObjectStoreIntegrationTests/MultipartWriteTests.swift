import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

/// The writer behaves like a file written under a temporary name and renamed: parts go up while
/// the data is still being written, the object appears only when the writer finishes, and an
/// abort, a cancellation, a failed part or a writer let go leaves no multipart upload behind.
@Suite("Object store: multipart writes appear whole or not at all", .serialized)
struct MultipartWriteTests {
    @Test("a 100 MiB object goes up in 8 MiB parts while it is written and appears only when finished")
    func hundredMiB() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint)
        let location = try s3.location("out/big.bin")
        let bytes = await S3Fixture.bytesOffPool(100 << 20, seed: 42)
        let writer = try await s3.store.openWriter(for: location, overwrite: false, contentType: "video/mp4")

        // Half of it, in odd-sized pieces (as a muxer's writes come).
        var offset = 0
        let chunk = (1 << 20) + 3
        while offset < 50 << 20 {
            try await writer.write(bytes[offset..<min(offset + chunk, bytes.count)])
            offset = min(offset + chunk, bytes.count)
        }
        // Parts are going up already (at most 4 in flight, so at least 6 − 4 = 2 of the first 6 are
        // done or sending); the object is not there, the upload is.
        let partsSoFar = try await waitFor { try tap.records().filter { $0.method == "PUT" && $0.path.contains("partNumber=") }.count >= 2 }
        #expect(partsSoFar, "parts were uploaded while writing went on")
        #expect(try await s3.store.info(location) == nil, "nothing appears before finish")
        let inProgress = try await s3.store.listMultipartUploads(bucket: s3.bucket)
        #expect(inProgress.map(\.location) == [location])

        while offset < bytes.count {
            try await writer.write(bytes[offset..<min(offset + chunk, bytes.count)])
            offset = min(offset + chunk, bytes.count)
        }
        let info = try await writer.finish()
        #expect(info.size == 100 << 20)
        #expect(writer.bytesWritten == 100 << 20)

        let head = try #require(try await s3.store.info(location))
        #expect(head.size == 100 << 20)
        #expect(head.contentType == "video/mp4")
        #expect(S3Fixture.same(try await s3.store.get(location), bytes), "the object is the bytes written, in order")
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)

        // 13 parts: twelve of 8 MiB and the 4 MiB rest, numbered 1…13 in the completion.
        let parts = try tap.records().filter { $0.method == "PUT" && $0.path.contains("partNumber=") }
        #expect(parts.count == 13)
        #expect(parts.filter { $0.bodyLength == 8 << 20 }.count == 12)
        #expect(parts.contains { $0.bodyLength == 4 << 20 })
    }

    @Test("holding the first part: bytes in it (and in the part being filled) can be rewritten; it goes up at the end, as part 1")
    func heldFirstPart() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint)
        let location = try s3.location("out/patched.bin")
        var bytes = await S3Fixture.bytesOffPool(30 << 20, seed: 7)
        let writer = try await s3.store.openWriter(for: location, overwrite: false, holdingFirstPart: true)
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + (1 << 20) + 5, bytes.count)
            try await writer.write(bytes[offset..<end])
            offset = end
        }
        // A header filled in at the end (an MP4's mdat size), and a byte in the last, unsent part.
        let header: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
        try writer.patch(at: 24, with: header)
        bytes.replaceSubrange(24..<28, with: header)
        try writer.patch(at: Int64(bytes.count - 1), with: [0x42])
        bytes[bytes.count - 1] = 0x42
        // Part 2 (8–16 MiB) went up already: it cannot change, and nothing is written.
        let refused = #expect(throws: ObjectStoreError.self) { try writer.patch(at: 9 << 20, with: [1]) }
        #expect(refused?.code == .invalidRange)

        // Parts 2 and 3 go up while the writer is still open (the tap logs a request once its body
        // is in, so wait for them); part 1, the held head, and 4, the rest, only at finish().
        let partNumbers = { () throws -> [String] in
            try tap.records().filter { $0.method == "PUT" && $0.path.contains("partNumber=") }.compactMap {
                $0.path.split(separator: "?").last?.split(separator: "&").first { $0.hasPrefix("partNumber=") }
                    .map { String($0.dropFirst("partNumber=".count)) }
            }
        }
        let early = await eventually(within: .seconds(60)) { (try? partNumbers().sorted()) == ["2", "3"] }
        let before = try partNumbers()
        #expect(early, "parts received before finish(): \(before)")
        try await writer.finish()
        #expect(S3Fixture.same(try await s3.store.get(location), bytes))
        let numbers = try partNumbers()
        #expect(numbers.count == 4 && Set(numbers.prefix(2)) == ["2", "3"] && Set(numbers.suffix(2)) == ["1", "4"],
                "parts sent in the order \(numbers)")
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)

        // Smaller than the held part: one PUT of the patched bytes.
        let small = try s3.location("out/small.bin")
        let smallWriter = try await s3.store.openWriter(for: small, overwrite: false, holdingFirstPart: true)
        try await smallWriter.write([1, 2, 3, 4, 5])
        try smallWriter.patch(at: 1, with: [9])
        try await smallWriter.finish()
        #expect(try await s3.store.get(small) == [1, 9, 3, 4, 5])
    }

    @Test("abort leaves no multipart upload and no object")
    func abort() async throws {
        let s3 = try await S3Fixture.make()
        let location = try s3.location("aborted.bin")
        let writer = try await s3.store.openWriter(for: location, overwrite: false)
        try await writer.write(S3Fixture.bytes(20 << 20))
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).count == 1)
        await writer.abort()
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)
        #expect(try await s3.store.info(location) == nil)
        let error = await #expect(throws: ObjectStoreError.self) { try await writer.write([1, 2, 3]) }
        #expect(error?.code == .writerClosed)
    }

    /// A muxer aborts its sink twice: from the thread that sees the cancellation, and again as
    /// it lets the sink go. The second call must not return before the first's abort is done: a
    /// `splice media-task` child exits right after it, which would cut the abort off.
    @Test("a second abort while the first is under way returns only once the upload is gone")
    func concurrentAborts() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint)
        let location = try s3.location("aborted-twice.bin")
        let writer = try await s3.store.openWriter(for: location, overwrite: false)
        try await writer.write(S3Fixture.bytes(20 << 20))
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).count == 1)
        // The AbortMultipartUpload is held by the tap, so the first abort is still under way
        // when the second is called.
        try await tap.delay("DELETE", milliseconds: 1500, count: 1)
        let first = Task { await writer.abort() }
        #expect(try await waitFor { try tap.records().contains { $0.method == "DELETE" } })
        await writer.abort()
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty,
                "the second abort returned while the upload was still there")
        await first.value
        #expect(try tap.records().filter { $0.method == "DELETE" }.count == 1)
    }

    @Test("a cancelled writing task aborts the upload: nothing is left")
    func cancellation() async throws {
        let s3 = try await S3Fixture.make()
        let location = try s3.location("cancelled.bin")
        let writer = try await s3.store.openWriter(for: location, overwrite: false)
        let piece = S3Fixture.bytes(4 << 20)
        let writing = Task {
            while true { try await writer.write(piece) }
        }
        #expect(try await waitFor { try await s3.store.listMultipartUploads(bucket: s3.bucket).count == 1 })
        writing.cancel()
        let error = await #expect(throws: ObjectStoreError.self) { try await writing.value }
        #expect(error?.code == .cancelled)
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)
        #expect(try await s3.store.info(location) == nil)
    }

    @Test("a part the service refuses for good fails the write and aborts the upload")
    func failedPart() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint)
        let location = try s3.location("failed.bin")
        let writer = try await s3.store.openWriter(for: location, overwrite: false)
        try await tap.fail("PUT", status: 400, count: 1)
        let error = await #expect(throws: ObjectStoreError.self) {
            for _ in 0..<8 { try await writer.write(S3Fixture.bytes(8 << 20)) }
            try await writer.finish()
        }
        #expect(error?.code == .requestRejected)
        #expect(error?.httpStatus == 400)
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)
        #expect(try await s3.store.info(location) == nil)
    }

    @Test("a writer let go unfinished aborts its upload in the background")
    func dropped() async throws {
        let s3 = try await S3Fixture.make()
        do {
            let writer = try await s3.store.openWriter(for: s3.location("dropped.bin"), overwrite: false)
            try await writer.write(S3Fixture.bytes(10 << 20))
            #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).count == 1)
        }
        #expect(try await waitFor { try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty })
    }

    @Test("a file uploads in parts and reads back; a missing file is a clear error that leaves nothing")
    func fileUpload() async throws {
        let s3 = try await S3Fixture.make()
        let bytes = await S3Fixture.bytesOffPool(21 << 20 + 17, seed: 9)
        let file = Fixtures.temporaryDirectory("upload").appendingPathComponent("out.mp4")
        try Data(bytes).write(to: file)
        let location = try s3.location("uploads/out.mp4")
        let info = try await s3.store.upload(file: file.path, to: location, overwrite: false)
        #expect(info.size == Int64(bytes.count))
        #expect(S3Fixture.same(try await s3.store.get(location), bytes))

        let error = await #expect(throws: ObjectStoreError.self) {
            try await s3.store.upload(file: file.path + ".missing", to: s3.location("uploads/none.mp4"), overwrite: false)
        }
        #expect(error?.code == .localFile)
        #expect(error?.message.contains("out.mp4.missing") == true)
        #expect(try await s3.store.listMultipartUploads(bucket: s3.bucket).isEmpty)
    }

    /// Polls `condition` for up to 20 s.
    private func waitFor(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
