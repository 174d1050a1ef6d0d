import Foundation

/// What ffmpeg decodes from a file: one MD5 per picture and per audio frame (timestamps
/// included), and the number of audio samples. The independent oracle for "the same output".
public struct Digests: Sendable, Equatable {
    /// Per decoded picture: dts, pts, duration, size, md5.
    public var video: [String]
    /// Per decoded audio frame: dts, pts, duration, size, md5.
    public var audio: [String]
    /// Decoded audio samples (per channel), summed over the frames.
    public var audioSamples: Int

    /// Decodes `path` with ffmpeg (off the cooperative pool).
    public init(of path: String) async throws {
        func frames(_ stream: String) async throws -> [Substring] {
            let output = try await ExternalTool.check(
                "ffmpeg", ["-v", "error", "-i", path, "-map", "0:\(stream):0", "-f", "framemd5", "-"])
            return output.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        }
        // framemd5 lines: stream, dts, pts, duration, size, md5.
        let pictures = try await frames("v"), sounds = try await frames("a")
        video = pictures.map { $0.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: ",") }
        audio = sounds.map { $0.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: ",") }
        audioSamples = sounds.reduce(0) { total, line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return total + (fields.count > 3 ? Int(fields[3]) ?? 0 : 0)
        }
    }

    /// The index of the first decoded picture and audio frame that differ from `other`'s (nil: none).
    public func firstDifferences(from other: Digests) -> (video: Int?, audio: Int?) {
        let video = zip(self.video, other.video).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        let audio = zip(self.audio, other.audio).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        return (video, audio)
    }
}
