import SpliceConcurrency
import Synchronization
import SpliceStore
import SpliceDaemon

/// LISTEN/NOTIFY as a wake-up only: a new job wakes the planner, claimable segments wake the
/// dispatcher, a (re)connection wakes everything ("anything may have been missed"). Every loop
/// also polls on its own timer, so a lost notification costs at most one poll interval.
final class NotificationService: Service {
    let name = "notifications"
    private let configuration: ConnectionConfiguration
    private let planner: WakeSignal
    private let stitcher: WakeSignal
    private let shell: CoordinatorShell
    private let listener = Mutex<(stopped: Bool, listener: PostgresListener?)>((false, nil))

    init(configuration: ConnectionConfiguration, planner: WakeSignal, stitcher: WakeSignal, shell: CoordinatorShell) {
        self.configuration = configuration
        self.planner = planner
        self.stitcher = stitcher
        self.shell = shell
    }

    func run() async throws {
        let created = PostgresListener(
            configuration: configuration, channels: [JobRepository.Channel.jobs, JobRepository.Channel.segments])
        let stoppedAlready = listener.withLock { state -> Bool in
            state.listener = created
            return state.stopped
        }
        if stoppedAlready { created.stop() }
        await withTaskCancellationHandler {
            for await wakeUp in created.wakeUps {
                switch wakeUp.channel {
                case JobRepository.Channel.jobs:
                    planner.signal()
                case JobRepository.Channel.segments:
                    await shell.workAvailable()
                default:
                    planner.signal()
                    stitcher.signal()
                    await shell.workAvailable()
                }
            }
        } onCancel: {
            created.stop()
        }
    }

    func shutdown() async {
        let current = listener.withLock { state -> PostgresListener? in
            state.stopped = true
            return state.listener
        }
        current?.stop()
    }
}
