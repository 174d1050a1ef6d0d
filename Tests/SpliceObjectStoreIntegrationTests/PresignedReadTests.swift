import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

/// A presigned URL is what FFmpeg's own http reader is handed: `ffmpeg` (the independent
/// decoder) reads the object through it — seeking to the `moov` at the end and back — and
/// decodes exactly the frames and samples of the local file.
@Suite("Object store: FFmpeg reads a presigned URL", .serialized)
struct PresignedReadTests {
    @Test("every video frame and audio sample decoded through a presigned URL equals the local file's")
    func ffmpegDecodesThroughPresignedURL() async throws {
        let s3 = try await S3Fixture.make()
        // The mp4 muxer writes the moov last: the reader has to seek over HTTP ranges.
        let clip = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "2"))
        let location = try s3.location("media/clip with space.mp4")
        try await s3.store.upload(file: clip, to: location, overwrite: false, contentType: "video/mp4")
        let url = try s3.store.presignedURL(for: location, expiresIn: .seconds(600))

        let local = try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", clip, "-map", "0", "-f", "framemd5", "-"])
        let remote = try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", url.url, "-map", "0", "-f", "framemd5", "-"])
        let frames = local.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(frames.count > 100, "60 video frames and about 94 audio frames were decoded")
        #expect(remote.text == local.text)
    }

    @Test("the emulator checks presigned signatures: a tampered or expired URL is refused")
    func tamperedAndExpired() async throws {
        let s3 = try await S3Fixture.make()
        let location = try s3.location("small.bin")
        try await s3.store.put(S3Fixture.bytes(2000), at: location, overwrite: false)
        let good = try s3.store.presignedURL(for: location, expiresIn: .seconds(60)).url
        let tampered = String(good.dropLast()) + (good.hasSuffix("0") ? "1" : "0")
        let expired = try s3.store.presignedURL(for: location, expiresIn: .seconds(60),
                                                now: Date(timeIntervalSinceNow: -3600)).url
        #expect(try await Self.status(good) == 200)
        #expect(try await Self.status(tampered) == 403)
        #expect(try await Self.status(expired) == 403)
    }

    /// The HTTP status a plain GET of `url` (`http://HOST:PORT/…`, no credentials of its own) gets.
    static func status(_ url: String) async throws -> Int {
        let rest = url.dropFirst("http://".count)
        let slash = try #require(rest.firstIndex(of: "/"))
        return await HTTPFetch.get(String(rest[..<slash]), String(rest[slash...]))?.status ?? 0
    }
}
