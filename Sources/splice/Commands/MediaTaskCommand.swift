import Foundation
import SpliceMedia
import CSpliceSystem

#if canImport(Glibc)
import Glibc
import SpliceCoordinator
#endif

/// `splice media-task`: one planning or stitching step for the coordinator, in a process of its
/// own, so that a crash on a client's file fails that job instead of the coordinator
/// (`MediaTaskIsolation.childProcess`). Reads a `MediaTask` as JSON on standard input and writes
/// a `MediaTaskResult` on standard output. Hidden: only the coordinator runs it.
struct MediaTaskCommand: Command {
    static let configuration = CommandConfiguration(
        name: "media-task", abstract: "Run one planning or stitching step for the coordinator (internal).",
        isHidden: true, environment: [.objectStorage])

    init(_ arguments: ParsedArguments) {}

    func run(_ context: CommandContext) async throws -> ExitCode {
        // Die with the coordinator: a step nobody waits for must not go on writing.
        splice_die_with_parent()
        let input = FileHandle.standardInput.readDataToEndOfFile()
        let result: MediaTaskResult
        do {
            let task = try JSONDecoder().decode(MediaTask.self, from: input)
            result = .succeeded(try await task.run())
        } catch let error as MediaError {
            result = .failed(code: error.code, message: error.message, retryable: error.isRetryable)
        } catch {
            result = .failed(code: .internalError, message: "the task on standard input is not a media task: \(error)",
                             retryable: false)
        }
        FileHandle.standardOutput.write(try JSONEncoder().encode(result))
        return .success
    }
}
