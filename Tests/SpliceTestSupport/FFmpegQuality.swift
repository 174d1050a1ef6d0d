import Foundation

/// FFmpeg's own `psnr` and `ssim` filters, run by the ffmpeg CLI over two whole files: the oracle
/// for every quality figure Splice measures (issue 27). Per-frame luma MSE and SSIM from the
/// filters' stats files, and the whole-file averages they print.
public struct FFmpegQuality: Sendable {
    public var mseY: [Double] = []
    public var ssimY: [Double] = []
    public var averagePSNRY = 0.0
    public var averagePSNR = 0.0
    public var averageSSIMY = 0.0
    public var averageSSIM = 0.0

    /// Scores `output` against `reference`, the reference first passed through `filter` (an
    /// FFmpeg filter chain, e.g. a scale) when one is given.
    public static func measure(_ output: String, reference: String, filter: String = "") async throws -> FFmpegQuality {
        let dir = Fixtures.temporaryDirectory("scores")
        let psnrLog = dir.appendingPathComponent("psnr.log").path, ssimLog = dir.appendingPathComponent("ssim.log").path
        let prefix = filter.isEmpty ? "[1:v]null[ref];" : "[1:v]\(filter)[ref];"
        let run = try await ExternalTool.check("ffmpeg", [
            "-hide_banner", "-i", output, "-i", reference, "-lavfi",
            prefix + "[ref]split[r1][r2];[0:v][r1]psnr=stats_file=\(psnrLog)[p];[p][r2]ssim=stats_file=\(ssimLog)",
            "-f", "null", "-"])
        var scores = FFmpegQuality()
        func field(_ line: Substring, _ name: String) throws -> Double {
            guard let value = line.split(separator: " ").first(where: { $0.hasPrefix(name + ":") })
                .flatMap({ Double($0.dropFirst(name.count + 1)) }) else {
                throw TestFailure("no \(name) in ffmpeg's line '\(line)'")
            }
            return value
        }
        for line in try String(contentsOfFile: psnrLog, encoding: .utf8).split(separator: "\n") {
            scores.mseY.append(try field(line, "mse_y"))
        }
        for line in try String(contentsOfFile: ssimLog, encoding: .utf8).split(separator: "\n") {
            scores.ssimY.append(try field(line, "Y"))
        }
        // "[Parsed_psnr_…] PSNR y:… u:… v:… average:… min:… max:…", "[Parsed_ssim_…] SSIM Y:… (…) … All:… (…)"
        for line in run.stderr.split(separator: "\n") {
            if line.contains("PSNR y:") {
                scores.averagePSNRY = try field(line, "y")
                scores.averagePSNR = try field(line, "average")
            } else if line.contains("SSIM Y:") {
                scores.averageSSIMY = try field(line, "Y")
                scores.averageSSIM = try field(line, "All")
            }
        }
        return scores
    }

    /// Luma PSNR of frames `range` (of their mean squared error, 8-bit peak), as FFmpeg computes
    /// a stretch's average.
    public func psnrY(frames range: Range<Int>) -> Double {
        let mse = mseY[range].reduce(0, +) / Double(range.count)
        return 10 * log10(255 * 255 / mse)
    }

    /// Mean luma SSIM of frames `range`.
    public func meanSSIMY(frames range: Range<Int>) -> Double {
        ssimY[range].reduce(0, +) / Double(range.count)
    }
}
