import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `splice export` and `transcode` with `s3://` inputs and outputs, against moto on loopback
/// (authentication on), the real `splice` binary given only `AWS_*` variables, and ffmpeg, a
/// local copy of the same command and the bucket itself as the judges.
@Suite("Media in object storage: export and transcode", .timeLimit(.minutes(5)))
struct ObjectCommandTests {
    /// A 3 s 320x240 clip with a keyframe every second and lossless audio (so a sample out of
    /// place would change the decoded audio).
    static func clip() async throws -> String {
        try await Fixtures.clip(Fixtures.ClipSpec(seconds: "3", audioCodec: ["-c:a", "pcm_s16le"], container: "mov"))
    }

    @Test("transcode from s3:// to s3:// decodes frame- and sample-exact like the same transcode of files")
    func transcodeBetweenObjects() async throws {
        let s3 = try await S3Media.make()
        let source = try await Self.clip()
        try await s3.put(source, as: "in/clip.mov")
        let flags = ["--segment-seconds", "1", "--jobs", "2", "--preset", "ultrafast"]
        let stored = try await SpliceProcess.run(["transcode", s3.url("in/clip.mov"), s3.url("out/clip.mp4")] + flags,
                                                 environment: s3.environment, timeout: .seconds(180))
        try #require(stored.status == 0, "\(stored.stderr)")
        let local = Fixtures.temporaryDirectory("files").appendingPathComponent("clip.mp4").path
        let onDisk = try await SpliceProcess.run(["transcode", source, local] + flags)
        try #require(onDisk.status == 0, "\(onDisk.stderr)")

        let fromBucket = try await Digests(of: try await s3.download("out/clip.mp4"))
        let fromFile = try await Digests(of: local)
        // 3 s at 30 fps; AAC decodes in whole 1024-sample frames, the last one padded (as ffmpeg's own encode).
        #expect(fromBucket.video.count == 90 && fromBucket.audioSamples == (3 * 48000 + 1023) / 1024 * 1024)
        #expect(fromBucket.firstDifferences(from: fromFile) == (nil, nil) && fromBucket == fromFile)
        #expect(try await s3.keys(under: "out/") == ["out/clip.mp4"])
        #expect(try await s3.unfinishedUploads().isEmpty)
    }

    @Test("an existing object is refused without -y and left as it was, replaced with -y")
    func existingObjectRefused() async throws {
        let s3 = try await S3Media.make()
        let source = try await Self.clip()
        let earlier = Array("an earlier output, not a video".utf8)
        try await s3.store.put(earlier, at: s3.object("out/taken.mp4"), overwrite: true)
        let refused = try await SpliceProcess.run(["export", source, s3.url("out/taken.mp4"), "--preset", "ultrafast"],
                                                  environment: s3.environment, timeout: .seconds(180))
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("already exists") && refused.stderr.contains("-y"), "\(refused.stderr)")
        #expect(try await s3.store.get(s3.object("out/taken.mp4")) == earlier)

        let replaced = try await SpliceProcess.run(["export", source, s3.url("out/taken.mp4"), "--preset", "ultrafast", "-y"],
                                                   environment: s3.environment, timeout: .seconds(180))
        try #require(replaced.status == 0, "\(replaced.stderr)")
        #expect(try await Digests(of: try await s3.download("out/taken.mp4")).video.count == 90)
        #expect(try await s3.unfinishedUploads().isEmpty)
    }

    @Test("a package to s3:// has every object a package on disk has, byte for byte, the master playlist written last")
    func packageToBucket() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Media.make(endpoint: tap.endpoint)
        let source = try await Self.clip()
        try await s3.put(source, as: "in/clip.mov")
        let flags = ["--dash", "--ladder", "320x240@400k,160x120@150k", "--hls-segment-seconds", "1", "--preset", "ultrafast"]
        // The package's first upload (a rendition's file) is slow: the manifests must wait for it.
        try await tap.delay("PUT", milliseconds: 1500, count: 1)
        let stored = try await SpliceProcess.run(["transcode", s3.url("in/clip.mov"), s3.url("show/out.m3u8")] + flags,
                                                 environment: s3.environment, timeout: .seconds(180))
        try #require(stored.status == 0, "\(stored.stderr)")
        let folder = Fixtures.temporaryDirectory("package").path
        let onDisk = try await SpliceProcess.run(["transcode", source, folder + "/out.m3u8"] + flags)
        try #require(onDisk.status == 0, "\(onDisk.stderr)")

        // Every file of the package on disk is an object with the same bytes, and nothing else.
        let files = try fileContents(under: folder)
        let keys = try await s3.keys(under: "show/")
        #expect(Set(keys) == Set(files.keys.map { "show/" + $0 }), "objects \(keys), files \(files.keys.sorted())")
        #expect(files.count == 3 * 5 + 2)  // 3 renditions × (init, 3 segments, playlist) + master + MPD
        for (name, bytes) in files {
            #expect(try await s3.store.get(s3.object("show/" + name)) == [UInt8](bytes), "show/\(name) differs")
        }

        // The order objects were created in, from what the tap saw: a PUT (not of a part) or a
        // multipart completion, per key. The master playlist's request came only after every
        // other object was there (its creation answered), the DASH manifest's after every rendition's.
        var created: [(seq: Int, key: String)] = []
        var arrived: [Int: Int] = [:], answered: [Int: Int] = [:]
        for (position, event) in try tap.timeline().enumerated() {
            switch event {
            case .answered(let seq, _): answered[seq] = position
            case .request(let seq, let record):
                arrived[seq] = position
                let creates = (record.method == "PUT" && !record.path.contains("partNumber="))
                    || (record.method == "POST" && record.path.contains("uploadId="))
                guard creates, let path = record.path.split(separator: "?").first,
                      path.hasPrefix("/\(s3.bucket)/show/") else { continue }
                created.append((seq, String(path.dropFirst(s3.bucket.count + 2))))
            }
        }
        #expect(Set(created.map(\.key)) == Set(keys) && created.count == keys.count, "\(created)")
        let master = try #require(created.first { $0.key == "show/out.m3u8" })
        let manifest = try #require(created.first { $0.key == "show/out.mpd" })
        for other in created where other.key != master.key {
            #expect((answered[other.seq] ?? .max) < arrived[master.seq]!, "\(other.key) was not there yet when the master playlist was sent")
            if other.key != manifest.key {
                #expect((answered[other.seq] ?? .max) < arrived[manifest.seq]!, "\(other.key) was not there yet when the MPD was sent")
            }
        }
    }

    @Test("a package interrupted while its files go up leaves none of them in the bucket and no multipart upload")
    func interruptedPackage() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Media.make(endpoint: tap.endpoint)
        let source = try await Self.clip()
        // Every object is slow to be taken (1.5 s each, four at a time), so the interrupt comes
        // while the package is going up: some files there, some on their way, most not started.
        try await tap.delay("PUT", milliseconds: 1500, count: 1000)
        let transcode = try SpliceProcess(
            ["transcode", source, s3.url("show/out.m3u8"), "--dash", "--ladder", "320x240@400k,160x120@150k",
             "--hls-segment-seconds", "1", "--preset", "ultrafast"], environment: s3.environment)
        let uploading = await eventually(within: .seconds(120)) {
            ((try? tap.records()) ?? []).contains { $0.method == "PUT" && $0.path.contains("/show/") } || !transcode.isRunning
        }
        try #require(uploading && transcode.isRunning, "no upload began while the transcode ran: \(transcode.stderrText)")
        let interrupted = ContinuousClock.now
        transcode.send(SIGINT)
        let result = await transcode.finish(within: .seconds(60))
        #expect(result.status == 130, "\(result.stderr)")
        // Stopped soon — not after uploading the other dozen files.
        #expect(ContinuousClock.now - interrupted < .seconds(12), "the interrupt took \(ContinuousClock.now - interrupted)")
        // Once the tap has answered everything it was sent (a PUT it held is still forwarded),
        // nothing of the package is in the bucket.
        #expect(await eventually(within: .seconds(30)) {
            let timeline = (try? tap.timeline()) ?? []
            let asked = timeline.filter { if case .request = $0 { true } else { false } }.count
            let answered = timeline.filter { if case .answered = $0 { true } else { false } }.count
            return asked == answered
        })
        let left = try await s3.keys(under: "show/")
        #expect(left.isEmpty, "left behind: \(left)")
        #expect(try await s3.unfinishedUploads().isEmpty)
    }
}
