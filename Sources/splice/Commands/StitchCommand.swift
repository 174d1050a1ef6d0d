import Foundation
import SpliceMedia

/// `splice stitch DIR OUTPUT`: joins segments kept by `transcode --keep-segments DIR` (or a
/// coordinator's spool) using the plan.json there — into one file, or, where the plan makes a
/// streaming package, into the package again. For operators re-running the last step.
struct StitchCommand: Command {
    static let directory = Positional<String>("dir", help: "A folder with plan.json and segment-NNNNN.splseg files.") { $0 }
    static let output = Positional<String>("output", help: "The file to write, or an object: s3://BUCKET/KEY.") { $0 }

    static let configuration = CommandConfiguration(
        name: "stitch", abstract: "Join kept segment files into the final output.",
        discussion: """
            The output appears only when the stitch succeeds. An existing output file is kept and \
            the stitch refused unless -y (--overwrite) is given; the plan and segment files are \
            never replaced. Segments kept from a streaming package (transcode OUT.m3u8 or \
            OUT.mpd) are packaged again: name the master playlist (OUT.m3u8) or, for a DASH-only \
            package, the manifest (OUT.mpd); the rendition folders are made beside it.
            """,
        arguments: [directory, output] + OutputOptions.arguments, environment: [.objectStorage])

    let directory: String
    let output: String
    let destination: OutputOptions

    init(_ arguments: ParsedArguments) throws {
        directory = try arguments.value(Self.directory)
        output = try arguments.value(Self.output)
        destination = try OutputOptions(arguments)
    }

    func validate() throws {
        let (plan, segments) = try load()
        try destination.check(output: output, inputs: [planURL.path] + segments.keys.sorted().map { segments[$0]! })
        try Self.checkPackageName(output, plan: plan)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let (plan, segments) = try load()
        if plan.package != nil {
            try Self.checkPackageName(output, plan: plan)
            let package = try await Packager(plan: plan).package(segments: segments, to: output, overwrite: destination.overwrite)
            context.output.writeLine(TranscodeCommand.describe(package, output: output, segments: plan.segments.count))
            return .success
        }
        let summary = try await Stitcher(plan: plan).stitch(segments: segments, to: output, overwrite: destination.overwrite)
        context.output.writeLine("wrote \(output): \(summary.videoFrames) video frames, \(summary.audioPackets) audio packets")
        return .success
    }

    /// A package is named by its master playlist (or, DASH only, its manifest): the rendition
    /// folders are named after it, so a file name would scatter them beside a file never written.
    static func checkPackageName(_ output: String, plan: SegmentPlan) throws {
        guard let package = plan.package else { return }
        let wanted = package.hls ? "m3u8" : "mpd"
        let given = output.split(separator: "/").last.map { $0.split(separator: ".", omittingEmptySubsequences: false) }
        let pathExtension = given.flatMap { $0.count > 1 ? $0.last.map(String.init) : nil }?.lowercased()
        guard pathExtension == wanted || (package.hls && package.dash && pathExtension == "mpd") else {
            let kind = package.hls ? (package.dash ? "HLS and DASH" : "HLS") : "DASH"
            let what = pathExtension == "m3u8" ? "a DASH package, with no HLS playlist"
                : pathExtension == "mpd" ? "an HLS package, with no DASH manifest"
                : "a streaming package (\(kind)), not one file"
            throw UsageError("cannot write '\(output)': these segments make \(what); name its "
                             + "\(package.hls ? "master playlist" : "manifest"), e.g. OUT.\(wanted) — its rendition "
                             + "folders are made beside it")
        }
    }

    private var planURL: URL { URL(fileURLWithPath: directory).appendingPathComponent("plan.json") }

    /// The plan in the folder and the segment file it expects for each index.
    private func load() throws -> (SegmentPlan, [Int: String]) {
        let plan: SegmentPlan
        do {
            plan = try JSONDecoder().decode(SegmentPlan.self, from: Data(contentsOf: planURL))
        } catch {
            throw UsageError("cannot read '\(planURL.path)': it must be the plan.json written by transcode --keep-segments")
        }
        var segments: [Int: String] = [:]
        for spec in plan.segments {
            segments[spec.index] = URL(fileURLWithPath: directory)
                .appendingPathComponent(String(format: "segment-%05d.splseg", spec.index)).path
        }
        // Every file the plan names, before any work: a folder missing one cannot be stitched.
        let missing = plan.segments.map(\.index).filter { !FileManager.default.fileExists(atPath: segments[$0]!) }
        if !missing.isEmpty {
            let names = missing.prefix(3).map { String(format: "segment-%05d.splseg", $0) }.joined(separator: ", ")
            throw UsageError("'\(directory)' lacks \(missing.count) of the plan's \(plan.segments.count) segment files (\(names)"
                             + (missing.count > 3 ? ", …" : "") + "); they cannot be made again from the others: "
                             + "run the transcode again with --keep-segments")
        }
        return (plan, segments)
    }
}
