import Foundation
import SpliceMedia
import SpliceTestSupport
import Testing

@Suite("Probing assets, checked against ffprobe")
struct AssetProbeTests {
    @Test(arguments: Fixtures.allShared)
    func tracksAgreeWithFFprobe(path: String) async throws {
        let asset = try await Asset.open(path)
        let probe = try await Probe(path)
        #expect(asset.tracks.count == probe.streams.count)
        for stream in probe.streams {
            let track = try #require(asset.track(stream.index))
            #expect(track.kind.rawValue == stream.codec_type || (stream.codec_type == "data" && track.kind == .data))
            if let name = stream.codec_name { #expect(track.codecName == name) }
            if stream.codec_type == "video" {
                #expect(track.width == stream.width && track.height == stream.height)
                #expect(track.pixelFormat == stream.pix_fmt)
                // ffprobe reports the display matrix counter-clockwise; we store the clockwise turn.
                #expect(track.rotation == (360 - stream.rotation) % 360)
                if let avg = stream.avg_frame_rate, avg != "0/0", let rate = track.frameRate {
                    let parts = avg.split(separator: "/").compactMap { Int64($0) }
                    #expect(Int64(rate.numerator) * parts[1] == Int64(rate.denominator) * parts[0])
                }
            }
            if stream.codec_type == "audio" {
                #expect(track.sampleRate == stream.sampleRate)
                #expect(track.channels == stream.channels)
            }
            if let start = stream.startMicroseconds, let ours = track.startTime {
                // Asset time is measured from the earliest audio/video start.
                let originMicros = asset.origin.converted(to: 1_000_000).value
                #expect(abs((ours.converted(to: 1_000_000).value + originMicros) - start) <= 1)
            }
        }
    }

    @Test(arguments: ["h264_aac_320x240_60fps_5s.mp4", "h264_bpyramid_800x640.mp4", "h264_1080p30_362s_videoonly.mp4",
                      "mpeg2_mp2_1080p.ts", "vp9_vorbis51_540p.webm"])
    func keyframesAgreeWithFFprobesPacketFlags(name: String) async throws {
        let path = Fixtures.shared(name)
        let asset = try await Asset.open(path)
        let video = try #require(asset.videoTrack)
        let ours = try await asset.keyframes(of: video)
        let tb = video.timeBase
        let expected = try await Probe.packets(path, select: "v:0").filter(\.isKeyframe).compactMap { $0.pts ?? $0.dts }
            .map { MediaTime(value: $0, timeBase: tb) - asset.origin }.sorted()
        #expect(!ours.isEmpty)
        #expect(ours == Array(Set(expected)).sorted())
    }

    @Test func theLongGOPFileHasItsKeyframesEveryEightSeconds() async throws {
        let asset = try await Asset.open(Fixtures.shared("h264_1080p30_362s_videoonly.mp4"))
        let keys = try await asset.keyframes(of: try #require(asset.videoTrack))
        #expect(keys.count == 44)
        #expect(keys[1] == MediaTime(value: 25, timescale: 3))
    }

    @Test func aMissingFileIsATypedErrorNamingThePath() async {
        let path = "/nonexistent/splice/missing.mp4"
        do {
            _ = try await Asset.open(path)
            Issue.record("opening a missing file succeeded")
        } catch let error as MediaError {
            #expect(error.code == .fileNotFound)
            #expect(error.description.contains(path))
        } catch {
            Issue.record("unexpected error type \(error)")
        }
    }

    @Test func randomBytesAreNotMedia() async throws {
        let dir = Fixtures.temporaryDirectory("random")
        let path = dir.appendingPathComponent("noise.mp4").path
        // Seeded: about one in 150 random buffers probes as an `lrc` lyrics file (a text track),
        // which libavformat (and ffprobe) then open; this one does not.
        var generator = SplitMix64(seed: 0x5EED_0F_5B11CE)
        let bytes = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &generator) }
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        await #expect {
            _ = try await Asset.open(path)
        } throws: { error in
            (error as? MediaError)?.code == .invalidMedia && "\(error)".contains("noise.mp4")
        }
    }

    @Test func aTruncatedCopyIsATypedError() async throws {
        // The MP4's index (moov) sits at the end, so a cut-off copy has none.
        let source = Fixtures.shared("h264_aac44k_720p_rotated90.mp4")
        let dir = Fixtures.temporaryDirectory("truncated")
        let path = dir.appendingPathComponent("cut.mp4").path
        let data = try Data(contentsOf: URL(fileURLWithPath: source))
        _ = FileManager.default.createFile(atPath: path, contents: data.prefix(data.count / 2))
        await #expect {
            _ = try await Asset.open(path)
        } throws: { error in
            guard let e = error as? MediaError else { return false }
            return e.code == .invalidMedia && !e.isRetryable && e.description.contains("cut.mp4")
        }
    }
}

