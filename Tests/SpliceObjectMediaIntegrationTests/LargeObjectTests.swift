import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A 100 MiB output into a bucket: uploaded in parts while it is written, and nothing left
/// behind when the export is interrupted or a part is refused.
@Suite("Media in object storage: large outputs", .serialized, .timeLimit(.minutes(5)))
struct LargeObjectTests {
    /// About 105 MB: 57 frames of uncompressed 1280x720 4:2:2 video (and PCM audio) in a MOV,
    /// which an export copies into another MOV of nearly the same size.
    static func source() async throws -> String {
        try await Fixtures.generated("large.mov", ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-f", "lavfi", "-i", "sine=r=48000",
            "-t", "2.28", "-c:v", "rawvideo", "-pix_fmt", "uyvy422", "-c:a", "pcm_s16le",
        ])
    }

    static let copy = ["--copy-video", "--copy-audio"]

    @Test("a 100 MiB output is uploaded in 8 MiB parts and is the file the same export writes to disk")
    func largeOutputInParts() async throws {
        let s3 = try await S3Media.make()
        let source = try await Self.source()
        let stored = try await SpliceProcess.run(["export", source, s3.url("out/large.mov")] + Self.copy,
                                                 environment: s3.environment, timeout: .seconds(180))
        try #require(stored.status == 0, "\(stored.stderr)")
        let local = Fixtures.temporaryDirectory("large").appendingPathComponent("large.mov").path
        let onDisk = try await SpliceProcess.run(["export", source, local] + Self.copy)
        try #require(onDisk.status == 0, "\(onDisk.stderr)")

        let info = try #require(try await s3.store.info(s3.object("out/large.mov")))
        let expected = try Data(contentsOf: URL(fileURLWithPath: local))
        #expect(info.size == Int64(expected.count) && info.size > 100 << 20)
        // A multipart object's ETag ends in its part count: ceil(size / 8 MiB).
        let parts = (expected.count + (8 << 20) - 1) / (8 << 20)
        #expect(info.etag?.hasSuffix("-\(parts)") == true, "ETag \(info.etag ?? "none"), \(parts) parts expected")
        #expect(try await s3.store.get(s3.object("out/large.mov")) == [UInt8](expected))
        #expect(try await s3.unfinishedUploads().isEmpty)
    }

    @Test("an export interrupted while its parts go up leaves no object and no multipart upload")
    func interruptedExport() async throws {
        let s3 = try await S3Media.make()
        let source = try await Self.source()
        let export = try SpliceProcess(["export", source, s3.url("out/interrupted.mov")] + Self.copy,
                                       environment: s3.environment)
        // Interrupt once the first part is on its way (the upload exists), well before the end.
        let started = await eventually(within: .seconds(120)) {
            !((try? await s3.unfinishedUploads()) ?? []).isEmpty || !export.isRunning
        }
        try #require(started && export.isRunning, "no upload began while the export ran: \(export.stderrText)")
        export.send(SIGINT)
        let result = await export.finish(within: .seconds(60))
        #expect(result.status == 130, "\(result.stderr)")
        #expect(try await s3.unfinishedUploads().isEmpty)
        #expect(try await s3.store.info(s3.object("out/interrupted.mov")) == nil)
    }

    @Test("a part the service refuses fails the export with the reason and leaves no object and no multipart upload")
    func refusedPart() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Media.make(endpoint: tap.endpoint)
        try await tap.fail("PUT", status: 403, count: 1)  // the first part
        let source = try await Self.source()
        let result = try await SpliceProcess.run(["export", source, s3.url("out/refused.mov")] + Self.copy,
                                                 environment: s3.environment, timeout: .seconds(120))
        #expect(result.status == 1)
        #expect(result.stderr.contains("UploadPart") && result.stderr.contains("out/refused.mov"), "\(result.stderr)")
        #expect(try await s3.unfinishedUploads().isEmpty)
        #expect(try await s3.store.info(s3.object("out/refused.mov")) == nil)
        let records = try tap.records()
        #expect(records.contains { $0.method == "DELETE" && $0.path.contains("uploadId=") }, "no AbortMultipartUpload sent")
    }
}
