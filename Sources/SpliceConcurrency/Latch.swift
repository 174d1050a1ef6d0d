/// A one-way switch several tasks can wait on: a service's "I have stopped". Once open it stays
/// open, and every wait — before or after — returns.
package final class Latch: Sendable {
    private let opened = AsyncCondition<Bool, Void>(false)

    package init() {}

    /// Whether ``open()`` has been called.
    package var isOpen: Bool {
        opened.withLock { $0 }
    }

    /// Opens the latch and wakes every waiting task; later calls do nothing more.
    package func open() {
        opened.resumeAll { open, _ in
            open = true
            return ()
        }
    }

    /// Returns once the latch is open (at once if it is), or when the calling task is cancelled.
    package func wait() async {
        await opened.wait { $0 }
    }
}
