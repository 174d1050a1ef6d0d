internal import CFFmpeg
public import Foundation

/// Diagnostics for segment files: copies one segment's packets, unchanged, into a container
/// FFmpeg's tools read (`.mp4`, `.mkv`, `.ts`), so `ffprobe` can inspect it or other tools can
/// join it. The result includes the segment's pre-roll and tail audio — it is the segment as
/// encoded, not as the stitcher keeps it.
public enum SegmentRemux {
    /// Writes the packets of `segment` into `output` (container from the extension), replacing a
    /// file already there (never the segment itself).
    public static func remux(segment: String, to output: URL) async throws {
        try await BlockingThread.run("splice.remux") {
            try run(segment: segment, destination: output.path)
        }
    }

    private static func run(segment: String, destination: String) throws(MediaError) {
        _ = FFmpeg.setUp
        let reader = try SegmentFileReader(path: segment)
        guard let type = OutputFileType(pathExtension: URL(fileURLWithPath: destination).pathExtension)?.muxerName
                ?? (destination.hasSuffix(".ts") ? "mpegts" : nil) else {
            throw MediaError(.invalidSettings, "cannot tell the container of '\(destination)'; use .mp4, .mkv or .ts")
        }
        try OutputDestination.check(output: destination, inputs: [segment], overwrite: true)
        let muxer = try Muxer(destination: destination, formatName: type, replacing: true)
        var timeBases: [AVRational] = []
        for params in reader.header.streams {
            guard let par = avcodec_parameters_alloc() else { throw MediaError(.internalError, "out of memory") }
            var owned: UnsafeMutablePointer<AVCodecParameters>? = par
            defer { avcodec_parameters_free(&owned) }
            try params.apply(to: par)
            _ = try muxer.addStream(parameters: par, timeBase: params.timeBase.av)
            timeBases.append(params.timeBase.av)
        }
        try muxer.writeHeader(metadata: [:], options: [:])
        let packet = Packet()
        while let stream = try reader.next(into: packet) {
            try muxer.write(packet, stream: stream, timeBase: timeBases[stream])
        }
        try muxer.finish()
    }
}
