import Foundation
import Testing
@testable import SpliceMedia

#if canImport(Glibc)
import Glibc
#endif

/// The output checks every export, transcode and stitch makes before any work, and the final
/// move that never replaces unless asked. Plain files in a temporary folder; no media.
@Suite("Output destination")
struct OutputDestinationTests {
    /// A fresh folder holding `input.mp4` (a few bytes), removed by the caller.
    private func folder() throws -> (URL, String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("splice-dest-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let input = dir.appendingPathComponent("input.mp4").path
        try Data("source".utf8).write(to: URL(fileURLWithPath: input))
        return (dir, input)
    }

    private func failure(_ output: String, inputs: [String], overwrite: Bool) -> MediaError? {
        do {
            try OutputDestination.check(output: output, inputs: inputs, overwrite: overwrite)
            return nil
        } catch {
            return error
        }
    }

    @Test func aNewFileInAWritableFolderPassesAndTheProbeLeavesNothing() throws {
        let (dir, input) = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for overwrite in [false, true] {
            #expect(failure(dir.appendingPathComponent("out.mp4").path, inputs: [input], overwrite: overwrite) == nil)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["input.mp4"])
    }

    @Test func theInputIsRefusedEvenWithOverwriteAlsoThroughLinks() throws {
        let (dir, input) = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let symlink = dir.appendingPathComponent("symlink.mp4").path
        let hardLink = dir.appendingPathComponent("hardlink.mp4").path
        try FileManager.default.createSymbolicLink(atPath: symlink, withDestinationPath: "input.mp4")
        #expect(link(input, hardLink) == 0)
        let viaDots = dir.appendingPathComponent("sub/../input.mp4").path
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("sub"), withIntermediateDirectories: false)
        for output in [input, symlink, hardLink, viaDots] {
            for overwrite in [false, true] {
                let error = failure(output, inputs: ["https://example.com/other.mp4", input], overwrite: overwrite)
                #expect(error?.code == .invalidSettings, "\(output) overwrite=\(overwrite)")
                #expect(error?.message.contains("'\(output)' is the input '\(input)'") == true, "\(error?.message ?? "")")
                #expect(error?.isRetryable == false)
            }
        }
        // An input given as a symbolic link or a file:// URL is the same file too.
        #expect(failure(input, inputs: [symlink], overwrite: true)?.code == .invalidSettings)
        #expect(failure(input, inputs: [URL(fileURLWithPath: input).absoluteString], overwrite: true)?.code == .invalidSettings)
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == Data("source".utf8))
    }

    @Test func anExistingOutputNeedsOverwrite() throws {
        let (dir, input) = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("out.mp4").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: output))
        let error = failure(output, inputs: [input], overwrite: false)
        #expect(error?.code == .outputExists)
        #expect(error?.message == "'\(output)' already exists; pass -y (--overwrite) to replace it, or choose another name")
        #expect(error?.isRetryable == false)
        #expect(failure(output, inputs: [input], overwrite: true) == nil)
        // A dangling symbolic link is something that exists, too.
        let dangling = dir.appendingPathComponent("dangling.mp4").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "nowhere.mp4")
        #expect(failure(dangling, inputs: [input], overwrite: false)?.code == .outputExists)
        #expect(failure(dangling, inputs: [input], overwrite: true) == nil)
    }

    @Test func foldersAndDevicesAreNotOutputsEvenWithOverwrite() throws {
        let (dir, input) = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for overwrite in [false, true] {
            #expect(failure(dir.path, inputs: [input], overwrite: overwrite)?.message.contains("is a folder") == true)
            #expect(failure(dir.path + "/", inputs: [input], overwrite: overwrite)?.code == .invalidSettings)
            #expect(failure("/dev/null", inputs: [input], overwrite: overwrite)?.message
                .contains("'/dev/null' is not a regular file") == true)
        }
        #expect(failure("", inputs: [input], overwrite: true)?.code == .invalidSettings)
    }

    @Test func aFolderThatIsMissingOrUnwritableIsNamed() throws {
        let (dir, input) = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("missing/deeper/out.mp4").path
        let underFile = input + "/out.mp4"
        let cases: [(String, String)] = [
            (missing, "the folder '\(dir.path)/missing/deeper' does not exist"),
            (underFile, "'\(input)' is not a folder"),
            ("/proc/out.mp4", "cannot create files in the folder '/proc'"),
        ]
        for (output, reason) in cases {
            let error = failure(output, inputs: [input], overwrite: true)
            #expect(error?.code == .writeFailed)
            #expect(error?.message.hasPrefix("cannot write '\(output)': \(reason)") == true, "\(error?.message ?? "")")
            #expect(error?.isRetryable == false)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("missing").path))
    }

    /// Mode 0500 stops everyone but root, so this runs only when the tests do not run as root.
    @Test(.enabled(if: geteuid() != 0)) func aReadOnlyFolderIsRefused() throws {
        let (dir, input) = try folder()
        let locked = dir.appendingPathComponent("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o500])
        defer {
            chmod(locked.path, 0o700)
            try? FileManager.default.removeItem(at: dir)
        }
        let error = failure(locked.appendingPathComponent("out.mp4").path, inputs: [input], overwrite: false)
        #expect(error?.code == .writeFailed)
        #expect(error?.message.contains("permission denied") == true)
    }

    // MARK: - The final move

    @Test func theFinalMoveReplacesOnlyWhenAllowed() throws {
        let (dir, _) = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let temporary = dir.appendingPathComponent(".out.tmp").path
        let destination = dir.appendingPathComponent("out.mp4").path
        func write(_ text: String, _ path: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }
        func read(_ path: String) -> String? { FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } }

        try write("new", temporary)
        try OutputDestination.moveIntoPlace(temporary, to: destination, replacing: false)
        #expect(read(destination) == "new" && read(temporary) == nil)

        try write("newer", temporary)
        #expect {
            try OutputDestination.moveIntoPlace(temporary, to: destination, replacing: false)
        } throws: { error in
            (error as? MediaError)?.code == .outputExists && "\(error)".contains("'\(destination)' appeared while")
        }
        #expect(read(destination) == "new" && read(temporary) == "newer")

        try OutputDestination.moveIntoPlace(temporary, to: destination, replacing: true)
        #expect(read(destination) == "newer" && read(temporary) == nil)
    }
}
