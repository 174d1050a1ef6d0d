internal import CFFmpeg
public import Foundation
public import SpliceCore

/// What a package holds, for people and benchmarks.
public struct PackageSummary: Sendable, Codable, Hashable {
    public struct Rendition: Sendable, Codable, Hashable {
        public var folder: String
        public var codecs: String
        public var width: Int?
        public var height: Int?
        /// Peak and average segment bit rates measured, bits per second: the peak as HLS's
        /// BANDWIDTH counts it (RFC 8216, runs of segments).
        public var peakBitrate: Int64
        public var averageBitrate: Int64
        /// The least rate that plays it from any segment start after DASH's 2 s `minBufferTime`:
        /// the MPD's `bandwidth` (bits per second; absent from summaries before 2026-12-08).
        public var deliveryBitrate: Int64?
        public var segments: Int
        public var packets: Int
    }

    public var playlist: String?
    public var manifest: String?
    public var renditions: [Rendition]
    public var bytes: Int64

    /// The package in a stitch's terms: the frames of one rung, the audio packets of every audio
    /// rendition, every byte.
    public var stitchSummary: StitchSummary {
        StitchSummary(videoFrames: renditions.first { $0.width != nil }?.packets ?? 0,
                      audioPackets: renditions.filter { $0.width == nil }.reduce(0) { $0 + $1.packets }, bytes: bytes)
    }
}

/// Where a package's files go: the master playlist (`OUT.m3u8`) and/or DASH manifest (`OUT.mpd`,
/// or beside the playlist with `--dash`), and one folder per rendition beside them, named after
/// the manifest: `OUT-720p-3M/`, `OUT-audio-1-eng/`. The output may be a path or a location in
/// storage (`s3://bucket/show/OUT.m3u8`: the folders are key prefixes, `s3://bucket/show/OUT-720p-3M/`).
public struct PackageLayout: Sendable, Hashable {
    /// The folder everything goes in: a path, or a location in storage; no trailing `/`.
    public var directory: String
    public var stem: String
    public var playlist: String?
    public var manifest: String?
    public var videoFolders: [String]
    public var audioFolders: [String]

    public init(plan: SegmentPlan, output: String) {
        if StorageRegistry.isStored(output) {
            let slash = output.lastIndex(of: "/")!  // `SCHEME://` has one
            directory = String(output[..<slash])
            let name = output[output.index(after: slash)...]
            stem = name.lastIndex(of: ".").map { String(name[..<$0]) } ?? String(name)
        } else {
            let url = URL(fileURLWithPath: output)
            directory = url.deletingLastPathComponent().path
            stem = url.deletingPathExtension().lastPathComponent
        }
        let hls = plan.package?.hls ?? true, dash = plan.package?.dash ?? false
        playlist = nil
        manifest = nil
        let stem = self.stem
        videoFolders = (plan.package?.renditions ?? []).enumerated().map { i, settings in
            "\(stem)-\(settings.height ?? i)p-\(LadderRung.format(settings.bitrate ?? 0))"
        }
        audioFolders = plan.audioTracks.enumerated().filter { !$0.element.copies }.map { i, track in
            let language = track.description.tags["language"].map { "-\($0)" } ?? ""
            return "\(stem)-audio-\(i + 1)\(language)"
        }
        // Two rungs of the same size and rate would share a folder: number them apart.
        var seen: [String: Int] = [:]
        videoFolders = videoFolders.map { name in
            seen[name, default: 0] += 1
            return seen[name]! > 1 ? "\(name)-\(seen[name]!)" : name
        }
        playlist = hls ? location(stem + ".m3u8") : nil
        manifest = dash ? location(stem + ".mpd") : nil
    }

    /// `name` in ``directory``.
    public func location(_ name: String) -> String {
        directory + (directory.hasSuffix("/") ? "" : "/") + name
    }

    /// Whether the package goes to storage rather than a folder.
    public var isStored: Bool { StorageRegistry.isStored(directory) }

    /// Every path (or location) the package publishes, folders first and the manifests last.
    public var publishedPaths: [String] {
        (videoFolders + audioFolders).map { location($0) } + [manifest, playlist].compactMap { $0 }
    }

    /// Refuses, before any work, a package whose paths exist (unless `overwrite`) or cannot be written.
    public func check(source: String, overwrite: Bool) throws(MediaError) {
        for path in [playlist, manifest].compactMap({ $0 }) {
            try OutputDestination.check(output: path, inputs: [source], overwrite: overwrite)
        }
        guard !overwrite else { return }
        let storage = try StorageRegistry.storage(for: directory)
        for folder in videoFolders + audioFolders {
            let path = location(folder)
            let taken = try storage.map { (storage) throws(MediaError) in !(try storage.list(prefix: path + "/")).isEmpty }
                ?? FileManager.default.fileExists(atPath: path)
            if taken {
                throw MediaError(.outputExists, "'\(path)' already exists; remove it or add -y (--overwrite) to replace the package")
            }
        }
    }
}

/// Writes a streaming package straight from a plan's segment files — no second pass: per video
/// rung, that rung's stream of every video segment; per audio track, its segments' kept packets,
/// timed exactly as ``Stitcher`` times them (``RenditionWriter``). Then the HLS playlists and the
/// DASH manifest, all in a hidden folder beside the output, published by renaming: the rendition
/// folders first, the manifests last, so a master playlist never names something incomplete, and
/// a failure leaves nothing behind.
public struct Packager: Sendable {
    public let plan: SegmentPlan

    public init(plan: SegmentPlan) {
        self.plan = plan
    }

    public func package(segments: [Int: String], checksums: [Int: SHA256Digest] = [:], to output: URL,
                        overwrite: Bool = false) async throws -> PackageSummary {
        try await package(segments: segments, checksums: checksums, to: output.path, overwrite: overwrite)
    }

    /// ``package(segments:checksums:to:overwrite:)`` to `output`, a path or a location in storage
    /// (`s3://…/OUT.m3u8`): the package is made in a local staging folder, then every rendition's
    /// files are uploaded, then the DASH manifest, and the master playlist last.
    public func package(segments: [Int: String], checksums: [Int: SHA256Digest] = [:], to output: String,
                        overwrite: Bool = false) async throws -> PackageSummary {
        let plan = self.plan
        let cancelled = CancelFlag()
        return try await withTaskCancellationHandler {
            try await BlockingThread.run("splice.package") {
                try PackageRun(plan: plan, segments: segments, checksums: checksums,
                               layout: PackageLayout(plan: plan, output: output), overwrite: overwrite,
                               cancelled: cancelled).run()
            }
        } onCancel: {
            cancelled.set()
        }
    }
}

private struct PackageRun {
    let plan: SegmentPlan
    let segments: [Int: String]
    let checksums: [Int: SHA256Digest]
    let layout: PackageLayout
    let overwrite: Bool
    /// Polled between fragments and files; set, it also stops the uploads (see
    /// ``MediaStorage/upload(files:overwrite:cancellation:)``) and the package leaves nothing.
    let cancelled: CancelFlag

    func run() throws(MediaError) -> PackageSummary {
        _ = FFmpeg.setUp
        guard let package = plan.package else { throw MediaError(.internalError, "plan \(plan.id) makes no package") }
        try layout.check(source: plan.source, overwrite: overwrite)
        try checkComplete(plan: plan, segments: segments)
        let fm = FileManager.default
        // Beside the output (published by renaming), or staged locally for storage (uploaded).
        let staging = layout.isStored ? fm.temporaryDirectory : URL(fileURLWithPath: layout.directory)
        let work = staging.appendingPathComponent(".\(layout.stem).splice-package-\(UInt32.random(in: 0...UInt32.max))")
        do { try fm.createDirectory(at: work, withIntermediateDirectories: false) } catch {
            throw MediaError(.writeFailed, "cannot create '\(work.path)': \(error.localizedDescription)")
        }
        defer { try? fm.removeItem(at: work) }

        var videos: [ManifestRendition] = []
        for (r, folder) in layout.videoFolders.enumerated() {
            let feed = try VideoUnits(plan: plan, specs: plan.videoSegments, files: segments, stream: r)
            if r == 0 { feed.checksums = checksums }  // every rung reads the same files: check them once
            let written = try RenditionWriter(grid: package.segmentDuration, folder: work.appendingPathComponent(folder),
                                          cancelled: cancelled)
                .write(feed, isVideo: true)
            videos.append(try rendition(.video, folder: folder, written: written))
        }
        var audios: [ManifestRendition] = []
        var a = 0
        for (t, track) in plan.audioTracks.enumerated() where !track.copies {
            let feed = try AudioUnits(plan: plan, track: t, specs: plan.audioSegments(track: t), files: segments,
                                      checksums: checksums)
            let folder = layout.audioFolders[a]
            let written = try RenditionWriter(grid: package.segmentDuration, folder: work.appendingPathComponent(folder),
                                          cancelled: cancelled)
                .write(feed, isVideo: false)
            var described = try rendition(.audio, folder: folder, written: written)
            described.language = track.description.tags["language"]
            described.name = track.description.tags["title"] ?? described.language.map { "Audio (\($0))" } ?? "Audio \(a + 1)"
            described.isDefault = a == 0
            audios.append(described)
            a += 1
        }

        if package.hls {
            for r in videos + audios {
                try write(HLSPlaylist.media(r.written), to: work.appendingPathComponent(r.folder).appendingPathComponent("index.m3u8"))
            }
            try write(HLSPlaylist.master(videos: videos, audios: audios), to: work.appendingPathComponent(layout.stem + ".m3u8"))
        }
        if package.dash {
            try write(DASHManifest.make(videos: videos, audios: audios), to: work.appendingPathComponent(layout.stem + ".mpd"))
        }
        try checkCancellation()
        if let storage = try StorageRegistry.storage(for: layout.directory) {
            try upload(from: work, to: storage)
        } else {
            try publish(from: work)
        }

        let all = videos + audios
        let bytes = all.reduce(Int64(0)) { $0 + $1.written.segments.reduce(0) { $0 + $1.bytes } }
        return PackageSummary(
            playlist: layout.playlist, manifest: layout.manifest,
            renditions: all.map { r in
                PackageSummary.Rendition(
                    folder: r.folder, codecs: r.codecs, width: r.kind == .video ? Int(r.written.reference.width) : nil,
                    height: r.kind == .video ? Int(r.written.reference.height) : nil, peakBitrate: r.written.peakBitrate,
                    averageBitrate: r.written.averageBitrate, deliveryBitrate: r.written.deliveryBitrate,
                    segments: r.written.segments.count, packets: r.written.packets)
            }, bytes: bytes)
    }

    private func rendition(_ kind: ManifestRendition.Kind, folder: String, written: WrittenRendition) throws(MediaError)
        -> ManifestRendition {
        guard let codecs = CodecString.of(written.reference) else {
            throw MediaError(.unsupportedCodec, "\(written.reference.codecName) cannot go into a CMAF package (h264 and aac can)")
        }
        return ManifestRendition(kind: kind, folder: folder, written: written, codecs: codecs)
    }

    private func checkCancellation() throws(MediaError) {
        if cancelled.isSet { throw MediaError.cancelled("the package '\(layout.playlist ?? layout.manifest ?? layout.directory)'") }
    }

    private func write(_ text: String, to url: URL) throws(MediaError) {
        guard FileManager.default.createFile(atPath: url.path, contents: Data(text.utf8)) else {
            throw MediaError(.writeFailed, "cannot write '\(url.path)'; check free disk space", isRetryable: true)
        }
    }

    /// Renames everything into place, folders first, manifests last; on failure, takes back what
    /// it had moved (and restores what it replaced).
    private func publish(from work: URL) throws(MediaError) {
        let fm = FileManager.default
        let replaced = work.appendingPathComponent(".replaced")
        var moved: [(URL, URL?)] = []
        do {
            for target in layout.publishedPaths.map({ URL(fileURLWithPath: $0) }) {
                let staged = work.appendingPathComponent(target.lastPathComponent)
                guard fm.fileExists(atPath: staged.path) else { continue }
                var aside: URL?
                if overwrite && fm.fileExists(atPath: target.path) {
                    try? fm.createDirectory(at: replaced, withIntermediateDirectories: true)
                    aside = replaced.appendingPathComponent(target.lastPathComponent)
                    guard rename(target.path, aside!.path) == 0 else {
                        throw MediaError(.writeFailed, "cannot replace '\(target.path)': \(String(cString: strerror(errno)))")
                    }
                }
                do {
                    try OutputDestination.moveIntoPlace(staged.path, to: target.path, replacing: false)
                } catch {
                    if let aside { rename(aside.path, target.path) }
                    throw error
                }
                moved.append((target, aside))
            }
        } catch {
            for (target, aside) in moved.reversed() {
                try? fm.removeItem(at: target)
                if let aside { rename(aside.path, target.path) }
            }
            throw (error as? MediaError) ?? MediaError(.writeFailed, "cannot publish the package: \(error)")
        }
    }

    /// Uploads the staged package to storage in the order a reader may find it: every
    /// rendition's files (several at once), then — with `-y` — the objects of an earlier package
    /// left in those folders removed, then the DASH manifest, and the master playlist last, so
    /// that it never names anything that is not there yet. A failure removes what this package
    /// uploaded (objects it replaced cannot come back: object storage has no rename).
    private func upload(from work: URL, to storage: any MediaStorage) throws(MediaError) {
        let fm = FileManager.default
        var renditions: [(path: String, location: String)] = []
        for folder in layout.videoFolders + layout.audioFolders {
            let staged = work.appendingPathComponent(folder)
            let names = ((try? fm.contentsOfDirectory(atPath: staged.path)) ?? []).sorted()
            renditions += names.map { (staged.appendingPathComponent($0).path, layout.location(folder + "/" + $0)) }
        }
        let manifests = [layout.manifest, layout.playlist].compactMap { $0 }.map { target in
            (path: work.appendingPathComponent(String(target[target.index(after: target.lastIndex(of: "/")!)...])).path,
             location: target)
        }
        var uploaded: [String] = []
        do throws(MediaError) {
            try storage.upload(files: renditions, overwrite: overwrite, cancellation: cancelled)
            uploaded = renditions.map(\.location)
            if overwrite {
                let current = Set(uploaded)
                try checkCancellation()
                for folder in layout.videoFolders + layout.audioFolders {
                    for stale in try storage.list(prefix: layout.location(folder) + "/") where !current.contains(stale) {
                        try storage.remove(stale)
                    }
                }
            }
            for manifest in manifests {
                try checkCancellation()
                try storage.upload(files: [manifest], overwrite: overwrite, cancellation: cancelled)
                uploaded.append(manifest.location)
            }
        } catch {
            for location in uploaded.reversed() { try? storage.remove(location) }
            throw error
        }
    }
}
