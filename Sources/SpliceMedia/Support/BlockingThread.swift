import Foundation

/// Runs blocking FFmpeg work on a dedicated thread, never on Swift's cooperative pool, and hands
/// the result back to the awaiting task through a continuation.
enum BlockingThread {
    /// Runs `body` on a new thread named `name` and returns (or throws) what it does.
    static func run<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try body() })
            }
            thread.name = name
            thread.stackSize = 8 << 20
            thread.start()
        }
    }
}
