public import Foundation
import Synchronization

/// Test media: the shared real-world clips and clips generated with FFmpeg's lavfi sources.
public enum Fixtures {
    /// The package root, found from this file's location.
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared real-world clips: `SPLICE_TEST_MEDIA` when set (a checkout that is not beside
    /// `shared/`, under /tmp say), else `../shared/media` beside the package.
    public static let sharedMedia: URL = {
        if let folder = ProcessInfo.processInfo.environment["SPLICE_TEST_MEDIA"], !folder.isEmpty {
            return URL(fileURLWithPath: folder, isDirectory: true)
        }
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media")
    }()

    /// The path of a shared clip by name.
    public static func shared(_ name: String) -> String {
        sharedMedia.appendingPathComponent(name).path
    }

    /// Every media file in `../shared/media`.
    public static var allShared: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: sharedMedia.path)) ?? []
        return names.filter { !$0.hasSuffix(".md") }.sorted().map(shared)
    }

    /// A directory for this test process's generated files, removed when the process ends.
    public static let scratch: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("splice-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("splice-tests-\(getpid())")
            try? FileManager.default.removeItem(at: url)
        }
        return url
    }()

    /// A fresh empty directory under ``scratch``.
    public static func temporaryDirectory(_ label: String = "t") -> URL {
        let url = scratch.appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// How a generated clip is made.
    public struct ClipSpec: Hashable, Sendable {
        public var seconds: String
        public var width: Int
        public var height: Int
        public var frameRate: String
        /// nil = no audio.
        public var sampleRate: Int?
        public var channels: Int
        /// ffmpeg video encoder args for the source itself.
        public var videoCodec: [String]
        public var audioCodec: [String]
        public var container: String
        /// Extra video filter appended to the chain (e.g. a VFR `setpts`).
        public var extraVideoFilter: String?
        public var extraOutputArgs: [String]

        public init(seconds: String = "2", width: Int = 320, height: Int = 240, frameRate: String = "30",
                    sampleRate: Int? = 48000, channels: Int = 2,
                    videoCodec: [String] = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p"],
                    audioCodec: [String] = ["-c:a", "aac", "-b:a", "128k"], container: String = "mp4",
                    extraVideoFilter: String? = nil, extraOutputArgs: [String] = []) {
            self.seconds = seconds
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.sampleRate = sampleRate
            self.channels = channels
            self.videoCodec = videoCodec
            self.audioCodec = audioCodec
            self.container = container
            self.extraVideoFilter = extraVideoFilter
            self.extraOutputArgs = extraOutputArgs
        }
    }

    private static let cache = LockedBox<[ClipSpec: String]>([:])
    /// One lock per fixture: a test waits only for the fixture it asked for, never behind other
    /// tests' larger ones (with one lock for all, the 1 s clip of the output-safety tests queued
    /// behind every other suite's fixtures and ran out of its two minutes on two busy cores).
    private static let generating = Mutex<[String: NSLock]>([:])

    private static func generating(_ key: String) -> NSLock {
        generating.withLock { locks in
            if let lock = locks[key] { return lock }
            let lock = NSLock()
            locks[key] = lock
            return lock
        }
    }

    /// A generated clip (cached per process): a moving test pattern with a frame counter and,
    /// when asked, non-periodic audio — a tone sweep over quiet pink noise, so misalignment shows.
    public static func clip(_ spec: ClipSpec = ClipSpec()) async throws -> String {
        try await ExternalTool.offPool { try clipBlocking(spec) }
    }

    private static func clipBlocking(_ spec: ClipSpec) throws -> String {
        let lock = generating("clip \(spec)")
        lock.lock()
        defer { lock.unlock() }
        if let path = cache.value[spec] { return path }
        let path = scratch.appendingPathComponent("clip-\(UUID().uuidString.prefix(8)).\(spec.container)").path
        var args = ["-v", "error", "-y",
                    "-f", "lavfi", "-i", "testsrc2=size=\(spec.width)x\(spec.height):rate=\(spec.frameRate):duration=\(spec.seconds)"]
        if let rate = spec.sampleRate {
            let layout = spec.channels == 1 ? "mono" : (spec.channels == 6 ? "5.1" : "stereo")
            args += ["-f", "lavfi", "-i", sweepSource(rate: rate, seconds: spec.seconds),
                     "-filter_complex", "[1:a]aformat=channel_layouts=\(layout)[a]"]
            args += ["-map", "0:v", "-map", "[a]"]
        }
        if let filter = spec.extraVideoFilter { args += ["-vf", filter] }
        args += spec.videoCodec
        if spec.sampleRate != nil { args += spec.audioCodec }
        args += spec.extraOutputArgs + [path]
        try ExternalTool.checkBlocking("ffmpeg", args)
        cache.value[spec] = path
        return path
    }

    private static let made = LockedBox<[String: String]>([:])

    /// A file made once per process by `ffmpeg` with `arguments` (the output path appended), named
    /// `name` in ``scratch``: fixtures the clip generator cannot describe (rewritten timestamps,
    /// several tracks, HDR metadata). `extraFiles` are written beside it first (subtitles, chapters).
    public static func generated(_ name: String, extraFiles: [String: String] = [:], ffmpeg arguments: [String]) async throws -> String {
        try await ExternalTool.offPool {
            let lock = generating("generated \(name)")
            lock.lock()
            defer { lock.unlock() }
            if let path = made.value[name] { return path }
            let dir = scratch.appendingPathComponent("gen-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (file, text) in extraFiles { try Data(text.utf8).write(to: dir.appendingPathComponent(file)) }
            let path = dir.appendingPathComponent(name).path
            let resolved = arguments.map { $0.replacingOccurrences(of: "{dir}", with: dir.path) }
            try ExternalTool.checkBlocking("ffmpeg", ["-v", "error", "-y"] + resolved + [path])
            made.value[name] = path
            return path
        }
    }

    /// An lavfi audio source: a tone sweeping smoothly between 200 Hz and 1.4 kHz (frequency
    /// modulated at 0.37 Hz, so no block size divides its period) over pink noise at −20 dB.
    /// Not periodic, so a lag of one sample shows up; continuous, so a lossless encode of it has
    /// an even block SNR and a dip at a join stands out. The noise is seeded: the same clip every
    /// run, so a quality threshold cannot pass or fail by the draw.
    public static func sweepSource(rate: Int, seconds: String) -> String {
        "aevalsrc=exprs='0.3*sin(2*PI*800*t+(600/0.37)*sin(2*PI*0.37*t))':s=\(rate):d=\(seconds)[s];"
            + "anoisesrc=c=pink:a=0.1:r=\(rate):d=\(seconds):seed=20261201[n];[s][n]amix=inputs=2:normalize=0[out0]"
    }
}
