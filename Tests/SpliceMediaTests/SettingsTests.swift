import Foundation
import Testing
@testable import SpliceMedia

@Suite("Settings validation")
struct SettingsTests {
    private func failure(_ settings: VideoSettings) -> SettingsError? {
        do { try settings.validate() } catch { return error }
        return nil
    }

    private func failure(_ settings: AudioSettings) -> SettingsError? {
        do { try settings.validate() } catch { return error }
        return nil
    }

    @Test(arguments: [0, -1, -1920, 16385])
    func nonsenseWidthsAreRefusedByName(width: Int) {
        let error = failure(VideoSettings(codec: .h264, width: width))
        #expect(error?.field == "width")
        #expect(error?.description.contains("\(width)") == true)
        #expect(failure(VideoSettings(codec: .h264, height: width))?.field == "height")
    }

    @Test func qualityAndRateControlChecks() {
        #expect(failure(VideoSettings(codec: .h264, quality: 52))?.field == "crf")
        #expect(failure(VideoSettings(codec: .vp9, quality: 63)) == nil)
        #expect(failure(VideoSettings(codec: .h264, quality: 23, bitrate: 1_000_000))?.field == "crf")
        #expect(failure(VideoSettings(codec: .prores, quality: 10))?.allowed.contains("profile") == true)
        #expect(failure(VideoSettings(codec: .h264, bitrate: 5))?.field == "video-bitrate")
        #expect(failure(VideoSettings(codec: .h264, bitrate: 2_000_000, maxBitrate: 1_000_000, bufferSize: 2_000_000))?
            .field == "max-bitrate")
        #expect(failure(VideoSettings(codec: .h264, bitrate: 2_000_000, maxBitrate: 3_000_000))?.field == "max-bitrate")
        #expect(failure(VideoSettings(codec: .h264, bitrate: 2_000_000, maxBitrate: 3_000_000, bufferSize: 4_000_000)) == nil)
    }

    @Test func presetsProfilesAndLevelsNameTheAllowedValues() {
        let preset = failure(VideoSettings(codec: .h264, preset: "quick"))
        #expect(preset?.field == "preset")
        #expect(preset?.allowed.contains("ultrafast") == true && preset?.allowed.contains("veryslow") == true)
        #expect(failure(VideoSettings(codec: .vp9, preset: "9"))?.allowed.contains("0 to 8") == true)
        #expect(failure(VideoSettings(codec: .av1, preset: "12")) == nil)
        #expect(failure(VideoSettings(codec: .h264, profile: "main10"))?.allowed.contains("high10") == true)
        #expect(failure(VideoSettings(codec: .hevc, profile: "main10")) == nil)
        #expect(failure(VideoSettings(codec: .h264, level: "4.1")) == nil)
        #expect(failure(VideoSettings(codec: .h264, level: "4.7"))?.field == "level")
        #expect(failure(VideoSettings(codec: .vp9, level: "4.1"))?.field == "level")
        #expect(failure(VideoSettings(codec: .h264, keyframeInterval: 0))?.field == "keyframe-interval")
        #expect(failure(VideoSettings(codec: .h264, frameRate: Rational(0, 1)))?.field == "frame-rate")
        #expect(VideoSettings.levelNumber("5.1") == 51 && VideoSettings.levelNumber("4") == 40)
    }

    @Test func theEncoderIsOneOfTheCodecsAndSetsThePresetRange() {
        #expect(failure(VideoSettings(codec: .av1, encoder: "libaom-av1")) == nil)
        #expect(failure(VideoSettings(codec: .av1, encoder: "libsvtav1")) == nil)
        let foreign = failure(VideoSettings(codec: .av1, encoder: "libx264"))
        #expect(foreign?.field == "video-encoder")
        #expect(foreign?.allowed.contains("libsvtav1") == true && foreign?.allowed.contains("libaom-av1") == true)
        #expect(failure(VideoSettings(codec: .h264, encoder: "libaom-av1"))?.allowed.contains("libx264") == true)
        #expect(failure(VideoSettings(codec: .h264, encoder: "x264"))?.requestKey == "video.encoder")
        // libaom's cpu-used goes to 8; SVT-AV1's preset to 13.
        let aom = failure(VideoSettings(codec: .av1, preset: "12", encoder: "libaom-av1"))
        #expect(aom?.field == "preset" && aom?.allowed.contains("0 to 8 for libaom-av1") == true)
        #expect(failure(VideoSettings(codec: .av1, preset: "8", encoder: "libaom-av1")) == nil)
        #expect(failure(VideoSettings(codec: .av1, preset: "12", encoder: "libsvtav1")) == nil)
    }

    @Test func audioChecks() {
        #expect(failure(AudioSettings(codec: .aac, sampleRate: 44100)) == nil)
        #expect(failure(AudioSettings(codec: .opus, sampleRate: 44100))?.allowed.contains("48000") == true)
        #expect(failure(AudioSettings(codec: .aac, sampleRate: 12345))?.field == "sample-rate")
        #expect(failure(AudioSettings(codec: .aac, channels: 0))?.field == "channels")
        #expect(failure(AudioSettings(codec: .aac, channels: 9))?.field == "channels")
        #expect(failure(AudioSettings(codec: .pcm, bitrate: 128_000))?.field == "audio-bitrate")
        #expect(failure(AudioSettings(codec: .aac, channelLayout: "7.3.5"))?.field == "channel-layout")
        #expect(failure(AudioSettings(codec: .aac, channelLayout: "5.1")) == nil)
    }

    @Test func settingsTravelAsJSONAndUnknownCodecsDoNotDecode() throws {
        let video = VideoSettings(codec: .hevc, width: 1280, quality: 28, preset: "fast", frameRate: Rational(30000, 1001))
        let audio = AudioSettings(codec: .opus, sampleRate: 48000, channels: 2, bitrate: 96000)
        let encoder = JSONEncoder()
        #expect(try JSONDecoder().decode(VideoSettings.self, from: encoder.encode(video)) == video)
        #expect(try JSONDecoder().decode(AudioSettings.self, from: encoder.encode(audio)) == audio)
        let bogus = Data(#"{"codec":"h263"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(VideoSettings.self, from: bogus) }
        #expect(VideoSettings.Codec(rawValue: "h263") == nil)
    }
}

@Suite("Resolving settings against a source")
struct ResolveTests {
    static func videoTrack(width: Int, height: Int, rotation: Int = 0, sar: Rational? = nil) -> Track {
        Track(id: 0, kind: .video, codecName: "h264", codecLongName: "H.264", profile: nil, timeBase: Rational(1, 15360),
              startTime: .zero, duration: MediaTime(seconds: 10), bitRate: nil, language: nil, isDefault: true,
              declaredFrameCount: nil, metadata: [:], width: width, height: height, sampleAspectRatio: sar,
              rotation: rotation, frameRate: Rational(30, 1), pixelFormat: "yuv420p", hasReordering: false,
              sampleRate: nil, channels: nil, channelLayout: nil, sampleFormat: nil)
    }

    private func resolve(_ s: VideoSettings, _ t: Track, _ type: OutputFileType = .mp4) throws -> (VideoEncoding, [String]) {
        var notices: [String] = []
        let e = try VideoEncoding.resolve(s, source: t, fileType: type, threads: 0, notices: &notices)
        return (e, notices)
    }

    @Test func oddSizesAreRoundedToEvenWithANotice() throws {
        let (e, notices) = try resolve(VideoSettings(codec: .h264, width: 1279, height: 719), Self.videoTrack(width: 1920, height: 1080))
        #expect(e.width == 1280 && e.height == 720)
        #expect(notices.count == 2)
        #expect(notices[0].contains("1279") && notices[0].contains("1280"))
    }

    @Test func oneSideKeepsTheAspect() throws {
        let (e, _) = try resolve(VideoSettings(codec: .h264, width: 640), Self.videoTrack(width: 1920, height: 1080))
        #expect(e.width == 640 && e.height == 360)
        let (r, _) = try resolve(VideoSettings(codec: .h264, height: 640), Self.videoTrack(width: 1280, height: 720, rotation: 90))
        #expect(r.width == 360 && r.height == 640)
        // An anamorphic source with a size asked for (or square pixels) gets square pixels at its display aspect.
        let (a, _) = try resolve(VideoSettings(codec: .h264, squarePixels: true), Self.videoTrack(width: 800, height: 640, sar: Rational(64, 45)))
        #expect(a.width == 1138 && a.height == 640 && a.sampleAspectRatio == Rational(1, 1))
        let (h, _) = try resolve(VideoSettings(codec: .h264, height: 480), Self.videoTrack(width: 720, height: 480, sar: Rational(32, 27)))
        #expect(h.width == 854 && h.height == 480 && h.sampleAspectRatio == Rational(1, 1))
        let (w, _) = try resolve(VideoSettings(codec: .h264, width: 720), Self.videoTrack(width: 720, height: 480, sar: Rational(32, 27)))
        #expect(w.width == 720 && w.height == 406 && w.sampleAspectRatio == Rational(1, 1))
    }

    /// Issue 21: with no size asked for, an anamorphic source keeps its stored pixels and writes
    /// their shape (FFmpeg's and HandBrake's automatic anamorphic), turned with the picture.
    @Test(arguments: [
        (800, 640, Rational(64, 45), 0, 800, 640, Rational(64, 45)),
        (720, 480, Rational(32, 27), 0, 720, 480, Rational(32, 27)),
        (1440, 1080, Rational(4, 3), 0, 1440, 1080, Rational(4, 3)),
        (720, 480, Rational(32, 27), 90, 480, 720, Rational(27, 32)),
        (720, 480, Rational(32, 27), 180, 720, 480, Rational(32, 27)),
    ])
    func anAnamorphicSourceKeepsItsStoredSizeAndPixelAspect(
        width: Int, height: Int, sar: Rational, rotation: Int, outWidth: Int, outHeight: Int, outSAR: Rational
    ) throws {
        let (e, notices) = try resolve(VideoSettings(codec: .h264), Self.videoTrack(width: width, height: height, rotation: rotation, sar: sar))
        #expect(e.width == outWidth && e.height == outHeight && e.sampleAspectRatio == outSAR)
        // The whole canvas is picture: nothing scaled, nothing padded.
        #expect(e.contentX == 0 && e.contentY == 0 && e.contentWidth == e.canvasWidth && e.contentHeight == e.canvasHeight)
        #expect(e.contentWidth == width && e.contentHeight == height)
        #expect(notices.isEmpty)
    }

    @Test func aBoxOfAnotherAspectIsFittedAndCentred() throws {
        let (e, _) = try resolve(VideoSettings(codec: .h264, width: 640, height: 640), Self.videoTrack(width: 1920, height: 1080))
        #expect(e.contentWidth == 640 && e.contentHeight == 360 && e.contentX == 0 && e.contentY == 140)
        // A portrait (rotated) source in a square box: fitted in the pre-rotation canvas.
        let (r, _) = try resolve(VideoSettings(codec: .h264, width: 640, height: 640), Self.videoTrack(width: 1280, height: 720, rotation: 90))
        #expect(r.rotation == 90 && r.canvasWidth == 640 && r.canvasHeight == 640)
        #expect(r.contentWidth == 640 && r.contentHeight == 360 && r.contentY == 140)
    }

    @Test func theDefaultIsConstantQuality() throws {
        let (hd, _) = try resolve(VideoSettings(codec: .h264), Self.videoTrack(width: 1920, height: 1080))
        #expect(hd.bitrate == nil && hd.options["crf"] == "23")
        // Ten seconds' worth of frames at most between keyframes (plus the encoder's scene cuts).
        #expect(hd.keyframeInterval == 300)
        let (hevc, _) = try resolve(VideoSettings(codec: .hevc), Self.videoTrack(width: 320, height: 240))
        #expect(hevc.bitrate == nil && hevc.options["crf"] == "28")
        // libvpx is in constant-quality mode only with a zero bit rate.
        let (vp9, _) = try resolve(VideoSettings(codec: .vp9), Self.videoTrack(width: 320, height: 240), .webm)
        #expect(vp9.bitrate == 0 && vp9.options["crf"] == "31")
        let (crf, _) = try resolve(VideoSettings(codec: .h264, quality: 20), Self.videoTrack(width: 320, height: 240))
        #expect(crf.bitrate == nil && crf.options["crf"] == "20")
        let (rate, _) = try resolve(VideoSettings(codec: .h264, bitrate: 800_000), Self.videoTrack(width: 320, height: 240))
        #expect(rate.bitrate == 800_000 && rate.options["crf"] == nil)
    }

    @Test func segmentsStartTheirBufferModelAtHalfAndKeepToTheirRate() throws {
        let vbv = VideoSettings(codec: .h264, quality: 20, maxBitrate: 1_000_000, bufferSize: 2_000_000)
        let track = Self.videoTrack(width: 320, height: 240)
        var notices: [String] = []
        let file = try VideoEncoding.resolve(vbv, source: track, fileType: .mp4, threads: 1, notices: &notices)
        #expect(file.options["x264-params"] == nil)
        let segment = try VideoEncoding.resolve(vbv, source: track, fileType: .mp4, threads: 1, closedGOP: true, notices: &notices)
        #expect(segment.options["x264-params"] == "vbv-init=0.50")
        var hevc = vbv
        hevc.codec = .hevc
        let x265 = try VideoEncoding.resolve(hevc, source: track, fileType: .mp4, threads: 1, closedGOP: true, notices: &notices)
        #expect(x265.options["x265-params"]?.split(separator: ":").contains("vbv-init=0.50") == true)
        // Without a peak rate there is no buffer model to start; a bit-rate segment keeps x264's
        // own rate tolerance, as a whole file does (a tighter one made joins dip: ``RateControl``).
        let rate = VideoSettings(codec: .h264, bitrate: 900_000)
        let plain = try VideoEncoding.resolve(rate, source: track, fileType: .mp4, threads: 1, closedGOP: true, notices: &notices)
        #expect(plain.options["x264-params"] == nil)
        // A short segment keeps to its share more tightly: a quarter per second, x264's own from 4 s.
        let short = try VideoEncoding.resolve(rate, source: track, fileType: .mp4, threads: 1, closedGOP: true,
                                              segmentLength: MediaTime(seconds: 2), notices: &notices)
        #expect(short.options["x264-params"] == "ratetol=0.50")
        #expect(RateControl.segmentRateTolerance(length: MediaTime(seconds: 1)) == "0.25")
        #expect(RateControl.segmentRateTolerance(length: MediaTime(value: 1500, timescale: 1000)) == "0.37")
        #expect(RateControl.segmentRateTolerance(length: MediaTime(value: 100, timescale: 1000)) == "0.10")
        #expect(RateControl.segmentRateTolerance(length: MediaTime(seconds: 4)) == nil)
        #expect(RateControl.segmentRateTolerance(length: MediaTime(seconds: 10)) == nil)
        let whole = try VideoEncoding.resolve(rate, source: track, fileType: .mp4, threads: 1, notices: &notices)
        #expect(whole.options["x264-params"] == nil)
    }

    @Test func containersRefuseCodecsTheyCannotHold() {
        #expect(throws: SettingsError.self) { try resolve(VideoSettings(codec: .prores), Self.videoTrack(width: 320, height: 240), .mp4) }
        #expect(throws: SettingsError.self) { try resolve(VideoSettings(codec: .h264), Self.videoTrack(width: 320, height: 240), .webm) }
        #expect(throws: SettingsError.self) { try resolve(VideoSettings(codec: .h264, pixelFormat: "rgb24"), Self.videoTrack(width: 320, height: 240)) }
    }
}

@Suite("Plane rotation")
struct PlaneRotationTests {
    /// Rotates a width × height plane of bytes and returns the result row by row.
    private func rotated(_ src: [UInt8], width: Int, height: Int, by degrees: Int) -> [UInt8] {
        let (dw, dh) = degrees % 180 == 0 ? (width, height) : (height, width)
        var dst = [UInt8](repeating: 0, count: dw * dh)
        src.withUnsafeBufferPointer { s in
            dst.withUnsafeMutableBufferPointer { d in
                PlaneRotation.rotate(src: s.baseAddress!, srcStride: width, width: width, height: height,
                                     dst: d.baseAddress!, dstStride: dw, step: 1, clockwise: degrees)
            }
        }
        return dst
    }

    @Test func quarterTurnsMoveCornersWhereAViewerExpects() {
        // 1 2 3
        // 4 5 6
        let src: [UInt8] = [1, 2, 3, 4, 5, 6]
        #expect(rotated(src, width: 3, height: 2, by: 90) == [4, 1, 5, 2, 6, 3])
        #expect(rotated(src, width: 3, height: 2, by: 180) == [6, 5, 4, 3, 2, 1])
        #expect(rotated(src, width: 3, height: 2, by: 270) == [3, 6, 2, 5, 1, 4])
    }

    @Test func fourQuarterTurnsAreTheIdentityOnLargePlanes() {
        let (w, h) = (77, 45)
        let src = (0..<(w * h)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var plane = src, (cw, ch) = (w, h)
        for _ in 0..<4 {
            plane = rotated(plane, width: cw, height: ch, by: 90)
            (cw, ch) = (ch, cw)
        }
        #expect(plane == src)
        #expect(rotated(rotated(src, width: w, height: h, by: 90), width: h, height: w, by: 270) == src)
    }
}
