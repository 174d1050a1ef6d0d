import Dispatch
import Foundation
import SpliceLog

/// Sends S3 requests with retries: each request runs, retries included, on a transfer thread
/// (``TransferThreads``); callers get the answer through a completion, a continuation
/// (``send(_:)``) or by blocking a thread of their own (``sendBlocking(_:)``).
///
/// Retried: 5xx, 408, 429, `RequestTimeout`, `ConditionalRequestConflict`, broken connections
/// and stalls, up to `maxAttempts` with exponential backoff and jitter. Never retried: other
/// 4xx answers (a wrong key or a missing object does not get better by asking again).
final class S3Client: Sendable {
    let configuration: ObjectStoreConfiguration
    let endpoint: S3Endpoint
    private let threads: TransferThreads
    private let mapper: S3ErrorMapper
    private let logger: Logger?

    init(configuration: ObjectStoreConfiguration, logger: Logger?) throws(ObjectStoreError) {
        self.configuration = try configuration.validated()
        endpoint = try S3Endpoint(configuration: configuration)
        threads = TransferThreads(limit: configuration.maxConnections)
        mapper = S3ErrorMapper(configuration: configuration)
        self.logger = logger
    }

    deinit {
        threads.shutDown()
    }

    /// Runs `request` (with retries) on a transfer thread and calls `completion` there with
    /// the answer (2xx or one of `request.accepting`) or the error.
    func start(_ request: S3Request, cancellation: CancellationFlag,
               completion: @escaping @Sendable (Result<HTTPResponse, ObjectStoreError>) -> Void) {
        threads.submit { [self] easy in
            completion(perform(request, on: easy, cancellation: cancellation))
        }
    }

    /// Runs `request` (with retries) on a thread of its own, for a transfer that may last as long
    /// as its consumer takes (a streaming read): it must not hold one of the shared transfer
    /// threads, which other requests — the same reader's next one included — may be waiting for.
    func startOnOwnThread(_ request: S3Request, cancellation: CancellationFlag,
                          completion: @escaping @Sendable (Result<HTTPResponse, ObjectStoreError>) -> Void) {
        let thread = Thread { [self] in
            completion(perform(request, on: CurlEasy(), cancellation: cancellation))
        }
        thread.name = "splice-s3-stream"
        thread.stackSize = 512 << 10
        thread.start()
    }

    /// Sends `request` and awaits the answer without occupying a cooperative thread; cancelling
    /// the calling task aborts the transfer and any pending retry.
    func send(_ request: S3Request) async throws(ObjectStoreError) -> HTTPResponse {
        let cancellation = CancellationFlag()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPResponse, ObjectStoreError>, Never>) in
                start(request, cancellation: cancellation) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }

    /// Sends `request` and blocks the calling thread until the answer. For threads that may
    /// block (an FFmpeg I/O callback, a file upload's own thread); never call it from a task.
    func sendBlocking(_ request: S3Request, cancellation: CancellationFlag = CancellationFlag())
        throws(ObjectStoreError) -> HTTPResponse
    {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        start(request, cancellation: cancellation) { result in
            box.result = result
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }

    // MARK: - Attempts

    private func perform(_ request: S3Request, on easy: CurlEasy?, cancellation: CancellationFlag)
        -> Result<HTTPResponse, ObjectStoreError>
    {
        guard let easy else {
            return .failure(ObjectStoreError(.connectionFailed, "\(request.operation) \(request.target): libcurl could not "
                + "create a handle (out of memory, or no TLS library)"))
        }
        let http = request.httpRequest(endpoint: endpoint, region: configuration.region,
                                       credentials: configuration.credentials)
        let timeouts = CurlEasy.Timeouts(connect: configuration.connectTimeout, stall: configuration.stallTimeout)
        var attempt = 1
        while true {
            if cancellation.isCancelled {
                return .failure(ObjectStoreError(.cancelled, "\(request.operation) \(request.target): cancelled"))
            }
            let error: ObjectStoreError
            switch easy.perform(http, timeouts: timeouts, cancellation: cancellation) {
            case .success(let response):
                if (response.isSuccess && !Self.isErrorDocument(response, of: request)) || request.accepting.contains(response.status) {
                    return .success(response)
                }
                error = mapper.error(for: response, of: request)
            case .failure(let failure):
                error = mapper.error(for: failure, of: request)
            }
            guard error.isRetryable, attempt < configuration.maxAttempts, (request.sink?.delivered ?? 0) == 0 else {
                return .failure(attempt == 1 ? error : Self.after(attempt, error))
            }
            let delay = configuration.retryBackoff.delay(attempt: attempt)
            logger?.warning("object store request failed, retrying", [
                "operation": request.operation, "target": request.target, "attempt": attempt,
                "error": error.code.rawValue, "status": error.httpStatus ?? 0, "delay": delay,
            ])
            guard cancellation.sleep(for: delay) else {
                return .failure(ObjectStoreError(.cancelled, "\(request.operation) \(request.target): cancelled"))
            }
            attempt += 1
        }
    }

    /// CompleteMultipartUpload may answer 200 and then, after a long wait, an `<Error>` document.
    private static func isErrorDocument(_ response: HTTPResponse, of request: S3Request) -> Bool {
        request.method == .post && response.status == 200 && S3XML(response.body).rootName == "Error"
    }

    private static func after(_ attempts: Int, _ error: ObjectStoreError) -> ObjectStoreError {
        var error = error
        error.message += " (after \(attempts) attempts)"
        return error
    }
}

/// Carries a result from a transfer thread to the thread blocked waiting for it (the semaphore
/// orders the write before the read), hence `@unchecked Sendable`.
private final class ResultBox: @unchecked Sendable {
    var result: Result<HTTPResponse, ObjectStoreError>?
}
