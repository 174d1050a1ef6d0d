import Foundation
import Testing
@testable import SpliceMedia

/// The muxer's failure paths: they must throw, never crash, and leave nothing behind.
@Suite("Muxer")
struct MuxerTests {
    /// `avio_open` fails after the context exists. The context used to be freed there and again in
    /// deinit (a throwing init that has set every stored property still runs deinit): SIGSEGV.
    @Test(arguments: ["/proc/splice-muxer-test.mp4", "/proc/self/splice-muxer-test.mkv"])
    func aFileThatCannotBeCreatedThrowsInsteadOfCrashing(destination: String) {
        for _ in 0..<3 {
            #expect {
                _ = try Muxer(destination: destination, formatName: destination.hasSuffix(".mkv") ? "matroska" : "mp4",
                              replacing: false)
            } throws: { error in
                (error as? MediaError)?.code == .writeFailed && "\(error)".contains("/proc")
            }
        }
    }
}
