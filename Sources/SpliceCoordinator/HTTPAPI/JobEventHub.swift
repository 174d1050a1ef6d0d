import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceHTTP
import SpliceJSON
import SpliceLog
import SpliceStore
import Synchronization

/// The event streams of `GET /v1/jobs/{id}/events` (Server-Sent Events). One loop serves every
/// open stream: while any is open it reads the watched jobs' states in one statement every
/// ``pollInterval`` (however many streams watch them), and for a job that changed replays its state
/// changes from the audit log and sends its progress. A stream costs a connection and a few
/// hundred bytes here; the database work does not grow with the number of streams, so open
/// streams do not slow dispatch.
///
/// Events: `state` (`id:` the audit log's id of the change, so a client that reconnects with
/// `Last-Event-ID` gets every change it missed and none twice) and `progress` (no id: it is the
/// job's figure now, sent when it moves). A stream ends after the job's final state; a client that
/// reconnects after seeing it is answered 204, which tells an EventSource to stop. A comment line
/// every 15 s keeps proxies from closing a quiet stream.
final class JobEventHub: Sendable {
    private final class Subscriber: Sendable {
        let job: JobID
        let stream: HTTPResponseStream
        /// The id of the last state event sent, and the last progress sent (fraction in 1/1000).
        let position: Mutex<(event: Int64, progress: Int?)>

        init(job: JobID, stream: HTTPResponseStream, after: Int64) {
            self.job = job
            self.stream = stream
            position = Mutex((after, nil))
        }
    }

    private struct State {
        var subscribers: [ObjectIdentifier: Subscriber] = [:]
        /// What each watched job looked like at the last round; a job not here is read afresh.
        var seen: [JobID: JobStreamState] = [:]
        var stopped = false
    }

    private let reads: JobRepository
    /// The active term's shell knows the running attempts' progress (a standby shows none).
    private let role: CoordinatorRole
    private let logger: Logger
    private let state = Mutex(State())
    private let wake = WakeSignal()
    private let pollInterval: Duration
    static let pingInterval: Duration = .seconds(15)

    init(reads: JobRepository, role: CoordinatorRole, pollInterval: Duration = .milliseconds(250), logger: Logger) {
        self.reads = reads
        self.role = role
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// Streams currently open.
    var openStreams: Int { state.withLock { $0.subscribers.count } }

    /// The response to a client asking for `job`'s events after audit-log id `after`: a stream,
    /// 204 when the job has ended and the client has seen its end, nil when there is no such job.
    func subscribe(job: JobID, after: Int64) async throws -> HTTPResponse? {
        guard let current = try await reads.jobStreamStates([job])[job] else { return nil }
        if current.state.isTerminal {
            let events = try await reads.stateEvents(ofJob: job, after: after)
            if events.isEmpty {
                return HTTPResponse(status: .noContent)
            }
        }
        let stream = HTTPResponseStream()
        let subscriber = Subscriber(job: job, stream: stream, after: after)
        let key = ObjectIdentifier(subscriber)
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.subscribers[key] = subscriber
            state.seen[job] = nil  // read it afresh, so the newcomer gets its replay at once
            return true
        }
        guard accepted else { return HTTPResponse(status: .serviceUnavailable) }
        stream.onClose { [weak self] in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: key) }
        }
        // The retry hint: reconnect after a second.
        stream.write(Array("retry: 1000\n\n".utf8))
        wake.signal()
        return HTTPResponse(status: .ok, headers: [("Content-Type", "text/event-stream"),
                                                   ("X-Accel-Buffering", "no")], stream: stream)
    }

    /// Serves the streams until cancelled; then ends them.
    func run() async {
        var lastPing = ContinuousClock.now
        while !Task.isCancelled {
            await wake.wait(upTo: pollInterval)
            if Task.isCancelled { break }
            await round()
            if ContinuousClock.now - lastPing >= Self.pingInterval {
                lastPing = .now
                for subscriber in state.withLock({ Array($0.subscribers.values) }) {
                    subscriber.stream.write(Array(": ping\n\n".utf8))
                }
            }
        }
        stop()
    }

    /// Ends every stream and refuses new ones (shutdown).
    func stop() {
        let subscribers = state.withLock { state -> [Subscriber] in
            state.stopped = true
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.stream.finish() }
    }

    /// One look at every watched job; events for those that changed.
    private func round() async {
        let (subscribers, seen) = state.withLock { ($0.subscribers.values.map { $0 }, $0.seen) }
        guard !subscribers.isEmpty else {
            state.withLock { $0.seen = [:] }
            return
        }
        let jobs = Array(Set(subscribers.map(\.job)))
        let states: [JobID: JobStreamState]
        do {
            states = try await reads.jobStreamStates(jobs)
        } catch {
            return  // the store is away: the next round tries again
        }
        var changed: [JobID: JobStreamState] = [:]
        for (job, now) in states where seen[job] != now { changed[job] = now }
        // Running jobs move between changes of the row (their attempts' PROGRESS): look at them too.
        var running: [JobID: RunningProgress] = [:]
        for (job, now) in states where now.state == .running {
            running[job] = await role.term?.shell.runningProgress(ofJob: job) ?? RunningProgress()
        }
        state.withLock { state in
            for (job, now) in states { state.seen[job] = now }
        }
        for job in jobs {
            guard let now = states[job] else { continue }
            let watchers = subscribers.filter { $0.job == job }
            if changed[job] != nil {
                let from = watchers.map { $0.position.withLock { $0.event } }.min() ?? 0
                let events: [JobStateEvent]
                do {
                    events = try await reads.stateEvents(ofJob: job, after: from)
                } catch {
                    state.withLock { _ = $0.seen.removeValue(forKey: job) }
                    continue
                }
                for watcher in watchers { send(events, to: watcher) }
            }
            for watcher in watchers { sendProgress(now, running: running[job] ?? RunningProgress(), to: watcher) }
            if now.state.isTerminal {
                for watcher in watchers { watcher.stream.finish() }
            }
        }
    }

    private struct StateData: Encodable {
        let job: String
        let state: JobState
        let from: JobState?
        let at: String
        let error: String?
    }

    private struct ProgressData: Encodable {
        let job: String
        let state: JobState
        let fraction: Double
        let segmentsDone: Int
        let segmentsTotal: Int?
    }

    private func send(_ events: [JobStateEvent], to watcher: Subscriber) {
        let after = watcher.position.withLock { $0.event }
        var text = ""
        var last = after
        for event in events where event.id > after {
            let data = StateData(job: watcher.job.description, state: event.to, from: event.from,
                                 at: Timestamp.text(event.at),
                                 error: [.failed, .cancelled].contains(event.to) ? event.detail : nil)
            guard let json = try? JSON.encode(data) else { continue }
            text += "id: \(event.id)\nevent: state\ndata: " + String(decoding: json, as: UTF8.self) + "\n\n"
            last = event.id
        }
        guard !text.isEmpty else { return }
        watcher.position.withLock { $0.event = last }
        watcher.stream.write(Array(text.utf8))
    }

    private func sendProgress(_ now: JobStreamState, running: RunningProgress, to watcher: Subscriber) {
        let progress = JobProgress(costTotal: now.costTotal, costDone: now.costDone)
        let fraction = JobStatusMapping.fraction(state: now.state, segmentsDone: now.segmentsDone,
                                                 segmentsTotal: now.segmentsTotal, progress: progress, running: running)
        let permille = Int((fraction * 1000).rounded())
        let moved = watcher.position.withLock { position -> Bool in
            guard position.progress != permille else { return false }
            position.progress = permille
            return true
        }
        guard moved, now.segmentsTotal > 0 || now.state.isTerminal else { return }
        let data = ProgressData(job: watcher.job.description, state: now.state, fraction: Double(permille) / 1000,
                                segmentsDone: now.segmentsDone, segmentsTotal: now.segmentsTotal > 0 ? now.segmentsTotal : nil)
        guard let json = try? JSON.encode(data) else { return }
        watcher.stream.write(Array(("event: progress\ndata: " + String(decoding: json, as: UTF8.self) + "\n\n").utf8))
    }
}
