import SpliceMedia

/// The streaming-package flags of `transcode` and `submit`: an output named `.m3u8` (HLS master
/// playlist) or `.mpd` (DASH manifest) makes an adaptive-bitrate ladder of CMAF renditions.
struct PackageOptions: Sendable {
    static let ladder = Option<String>("ladder", valueName: "auto|WxH@RATE,…",
        help: "Rungs of a .m3u8/.mpd package: auto (Apple's HLS authoring ladder at or below the source's height) "
            + "or sizes with average rates, e.g. 1280x720@3M,640x360@1M (max rate 110 %, buffer 2 s of each).") { $0 }
    static let hlsSegmentSeconds = Option<MediaTime>("hls-segment-seconds", valueName: "time",
        help: "Streaming segment length of a package (default 6); every rung has an IDR picture at each multiple.")
    static let dash = Flag("dash", help: "Also write a DASH manifest (OUT.mpd) over the same CMAF segments of an .m3u8 package.")

    static let arguments: [any ArgumentDeclaration] = [ladder, hlsSegmentSeconds, dash]

    /// The package `output` asks for; nil for an ordinary file (the package flags are then refused).
    let package: PackageRequest?

    init(_ arguments: ParsedArguments, output: String) throws {
        let lower = output.lowercased()
        let hls = lower.hasSuffix(".m3u8"), mpd = lower.hasSuffix(".mpd")
        let dash = arguments[Self.dash]
        guard hls || mpd else {
            if arguments[Self.ladder] != nil || arguments[Self.hlsSegmentSeconds] != nil || dash {
                throw UsageError("--ladder, --hls-segment-seconds and --dash make a streaming package: name the output "
                                 + ".m3u8 (HLS) or .mpd (DASH)")
            }
            package = nil
            return
        }
        if mpd && dash { throw UsageError("--dash adds a DASH manifest to an .m3u8 package; an .mpd output is DASH already") }
        do {
            var rungs: [LadderRung]?
            if let text = arguments[Self.ladder] { rungs = try PackageRequest.parseLadder(text) }
            package = PackageRequest(ladder: rungs, segmentDuration: arguments[Self.hlsSegmentSeconds] ?? PackageRequest.defaultSegmentDuration,
                                     hls: hls, dash: mpd || dash)
        } catch {
            throw UsageError(error)
        }
    }

    /// `request` with the package set and checked again (a package refuses a single rate or size).
    func apply(to request: inout TranscodeRequest) throws {
        guard let package else { return }
        request.package = package
        do { try request.validate() } catch { throw UsageError(error) }
    }
}
