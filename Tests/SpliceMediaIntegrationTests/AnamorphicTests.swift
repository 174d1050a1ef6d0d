import Foundation
import SpliceMedia
import SpliceTestSupport
import Testing

/// Issue 21: an anamorphic source (pixels that are not square) keeps its stored size and its
/// pixel aspect ratio when no size is asked for, as one FFmpeg does; square pixels only with a
/// size or `squarePixels`. ffprobe reads back what was written; ffmpeg's own encode of the same
/// source is the reference.
@Suite("Anamorphic sources")
struct AnamorphicTests {
    /// A generated anamorphic clip: a test pattern stored at `size` with pixel aspect `sar`.
    static func clip(_ size: String, sar: String, rate: String, rotation: Int? = nil) async throws -> String {
        let name = "anamorphic-\(size)-\(sar.replacingOccurrences(of: "/", with: "x")).mp4"
        let upright = try await Fixtures.generated(name, ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate):duration=2", "-vf", "setsar=\(sar)",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p"])
        guard let rotation else { return upright }
        // FFmpeg 5.1 writes a display matrix from the `rotate` tag only when copying.
        return try await Fixtures.generated("rotated-\(rotation)-" + name, ffmpeg: [
            "-i", upright, "-c", "copy", "-metadata:s:v", "rotate=\(rotation)"])
    }

    struct Shape: Equatable, CustomStringConvertible {
        var width: Int
        var height: Int
        var sar: String
        var description: String { "\(width)x\(height) SAR \(sar)" }
    }

    /// What ffprobe says of the first video track: stored size and pixel aspect ratio.
    static func shape(_ path: String) async throws -> Shape {
        let out = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                           "stream=width,height,sample_aspect_ratio", "-of", "csv=p=0", path])
        let fields = out.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        try #require(fields.count == 3, "ffprobe said \(out.text)")
        return Shape(width: Int(fields[0]) ?? 0, height: Int(fields[1]) ?? 0, sar: fields[2])
    }

    /// One ffmpeg's encode of `source` at the same default size (its autorotate turns a rotated
    /// picture upright, as Splice does).
    static func ffmpegShape(_ source: String) async throws -> Shape {
        let output = Fixtures.temporaryDirectory("ffmpeg-anamorphic").appendingPathComponent("ffmpeg.mp4").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", source, "-c:v", "libx264", "-preset", "ultrafast",
                                                "-frames:v", "5", output])
        return try await shape(output)
    }

    static let video = VideoSettings(codec: .h264, quality: 30, preset: "ultrafast")

    func export(_ source: String, to name: String, video: VideoSettings = Self.video) async throws -> String {
        let output = Fixtures.temporaryDirectory("anamorphic").appendingPathComponent(name)
        let session = ExportSession(asset: try await Asset.open(source), outputURL: output)
        session.videoSettings = video
        try await session.export()
        return output.path
    }

    func transcode(_ source: String, to name: String, video: VideoSettings = Self.video) async throws -> String {
        let output = Fixtures.temporaryDirectory("anamorphic").appendingPathComponent(name)
        let type = try #require(OutputFileType(pathExtension: output.pathExtension))
        let request = TranscodeRequest(video: video, audio: nil, fileType: type, segmentDuration: MediaTime(seconds: 1))
        _ = try await Transcoder(options: .init(source: source, output: output, request: request, jobs: 2)).run()
        return output.path
    }

    enum Source: String, CaseIterable, CustomTestStringConvertible {
        /// The shared B-pyramid clip: 800×640 at 64:45 (16:9 on screen).
        case bpyramid
        /// DVD NTSC widescreen: 720×480 at 32:27.
        case dvd
        /// HDV: 1440×1080 at 4:3.
        case hdv
        /// The DVD clip with a quarter turn in its display matrix.
        case rotatedDVD

        var testDescription: String { rawValue }

        func path() async throws -> String {
            switch self {
            case .bpyramid: Fixtures.shared("h264_bpyramid_800x640.mp4")
            case .dvd: try await AnamorphicTests.clip("720x480", sar: "32/27", rate: "30000/1001")
            case .hdv: try await AnamorphicTests.clip("1440x1080", sar: "4/3", rate: "25")
            case .rotatedDVD: try await AnamorphicTests.clip("720x480", sar: "32/27", rate: "30000/1001", rotation: 90)
            }
        }

        /// What the output must be, written out (ffmpeg's encode is checked to agree).
        var expected: Shape {
            switch self {
            case .bpyramid: Shape(width: 800, height: 640, sar: "64:45")
            case .dvd: Shape(width: 720, height: 480, sar: "32:27")
            case .hdv: Shape(width: 1440, height: 1080, sar: "4:3")
            case .rotatedDVD: Shape(width: 480, height: 720, sar: "27:32")
            }
        }
    }

    @Test(arguments: Source.allCases)
    func withNoSizeTheStoredSizeAndPixelAspectAreKept(_ source: Source) async throws {
        let path = try await source.path()
        #expect(try await Self.ffmpegShape(path) == source.expected, "ffmpeg's own encode")
        #expect(try await Self.shape(try await export(path, to: "export.mp4")) == source.expected, "export")
        #expect(try await Self.shape(try await transcode(path, to: "transcode.mp4")) == source.expected, "transcode")
    }

    @Test func matroskaAndWebMCarryThePixelAspectToo() async throws {
        let path = try await Source.dvd.path()
        #expect(try await Self.shape(try await transcode(path, to: "out.mkv")) == Source.dvd.expected)
        // VP9 has no pixel aspect in its bitstream: only the container's display size says it, in
        // whole pixels (853×480 for 720×480 at 32:27), so ffmpeg's own WebM is the reference.
        let vp9 = VideoSettings(codec: .vp9, quality: 40, preset: "8")
        let theirs = Fixtures.temporaryDirectory("ffmpeg-webm").appendingPathComponent("ffmpeg.webm").path
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-c:v", "libvpx-vp9", "-deadline", "realtime",
                                                "-cpu-used", "8", "-frames:v", "3", theirs])
        let webm = try await Self.shape(try await export(path, to: "out.webm", video: vp9))
        #expect(webm == (try await Self.shape(theirs)))
        #expect(webm.width == 720 && webm.height == 480 && webm.sar != "1:1", "\(webm)")
    }

    @Test func squarePixelsOrASizeScaleToTheDisplayAspect() async throws {
        let bpyramid = try await Source.bpyramid.path()
        let square = VideoSettings(codec: .h264, quality: 30, preset: "ultrafast", squarePixels: true)
        #expect(try await Self.shape(try await export(bpyramid, to: "square.mp4", video: square))
                == Shape(width: 1138, height: 640, sar: "1:1"))
        #expect(try await Self.shape(try await transcode(bpyramid, to: "square.mp4", video: square))
                == Shape(width: 1138, height: 640, sar: "1:1"))
        let rotated = try await Source.rotatedDVD.path()
        #expect(try await Self.shape(try await export(rotated, to: "square.mp4", video: square))
                == Shape(width: 480, height: 854, sar: "1:1"))
        let sized = VideoSettings(codec: .h264, height: 360, quality: 30, preset: "ultrafast")
        #expect(try await Self.shape(try await export(try await Source.dvd.path(), to: "sized.mp4", video: sized))
                == Shape(width: 640, height: 360, sar: "1:1"))
    }
}
