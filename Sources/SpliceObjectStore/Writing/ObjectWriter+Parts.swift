/// The part machinery behind ``ObjectWriter``: cutting parts, starting the upload, uploading
/// parts concurrently with a bound on how many are in flight, completing.
extension ObjectWriter {
    /// S3's limit on parts per upload.
    static let maximumParts = 10_000

    /// The size of part `number`: the configured size, doubled every 1,000 parts.
    func partSize(_ number: Int) -> Int {
        client.configuration.partSize << min((number - 1) / 1_000, 9)
    }

    /// Appends `bytes` to the part being filled; returns the parts that became full.
    func cutParts(appending bytes: some Collection<UInt8>, to state: inout State) -> [(number: Int, bytes: [UInt8])] {
        var full: [(number: Int, bytes: [UInt8])] = []
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let size = partSize(state.nextPart)
            if state.buffer.isEmpty { state.buffer.reserveCapacity(size) }
            let end = bytes.index(index, offsetBy: size - state.buffer.count, limitedBy: bytes.endIndex) ?? bytes.endIndex
            state.buffer.append(contentsOf: bytes[index..<end])
            index = end
            if state.buffer.count == size {
                full.append((state.nextPart, state.buffer))
                state.nextPart += 1
                state.buffer = []
            }
        }
        state.bytesWritten += Int64(bytes.count)
        return full
    }

    /// Uploads part `number` in the background once a slot is free (starting the multipart
    /// upload first if this is the first part).
    func startPart(_ number: Int, _ bytes: [UInt8]) async throws(ObjectStoreError) {
        guard number <= Self.maximumParts else {
            throw ObjectStoreError(.requestRejected, "\(location): more than 10,000 parts; raise the part size")
        }
        let uploadID = try await ensureUpload()
        try await acquireSlot()
        let flag = CancellationFlag()
        state.withLock { $0.cancellations[number] = flag }
        let request = client.uploadPartRequest(location, uploadID: uploadID, number: number, bytes: bytes)
        client.start(request, cancellation: flag) { result in
            self.partDone(number, result)
        }
    }

    /// The upload's id, creating the upload on first use.
    private func ensureUpload() async throws(ObjectStoreError) -> String {
        if let existing = state.withLock({ $0.uploadID }) { return existing }
        let created = try await client.createMultipartUpload(location, contentType: contentType)
        let aborted = state.withLock { state in
            state.uploadID = created
            return state.phase == .aborted
        }
        if aborted {
            // abort() ran while the upload was being created and found no id: abort it here.
            _ = try? await client.send(client.abortRequest(location, uploadID: created))
            throw cancelledError()
        }
        return created
    }

    /// Takes a slot for one more part in flight, waiting while all are taken.
    private func acquireSlot() async throws(ObjectStoreError) {
        let limit = client.configuration.concurrentParts
        while true {
            let acquired = try state.withLock { (state) throws(ObjectStoreError) -> Bool in
                if let failure = state.failure { throw failure }
                guard state.phase == .open || state.phase == .finishing else { throw cancelledError() }
                guard state.inFlight < limit else { return false }
                state.inFlight += 1
                return true
            }
            if acquired { return }
            await waitUntil { $0.inFlight < limit || $0.failure != nil }
            try await checkCancellation()
        }
    }

    /// Records a part's result and wakes whoever waits for a slot or for the parts to finish.
    private func partDone(_ number: Int, _ result: Result<HTTPResponse, ObjectStoreError>) {
        let (waiters, stop) = state.withLock { state in
            state.inFlight -= 1
            state.cancellations[number] = nil
            var failed: ObjectStoreError?
            switch result {
            case .success(let response):
                if let etag = response.header("etag") {
                    state.etags[number] = ObjectInfo.unquoted(etag)
                } else {
                    failed = ObjectStoreError(.invalidResponse, "UploadPart \(location) part \(number): the answer has no ETag",
                                              httpStatus: response.status)
                }
            case .failure(let error):
                failed = error
            }
            var stop: [CancellationFlag] = []
            if let failed, state.failure == nil {
                state.failure = failed
                stop = Array(state.cancellations.values)  // the upload is lost: do not finish the others
            }
            defer { state.waiters = [] }
            return (state.waiters, stop)
        }
        stop.forEach { $0.cancel() }
        waiters.forEach { $0.resume() }
    }

    /// Waits until no part is in flight, then throws the first part failure, if any.
    func drain() async throws(ObjectStoreError) {
        await waitUntilNoneInFlight()
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    /// Waits until no part is in flight.
    func waitUntilNoneInFlight() async {
        await waitUntil { $0.inFlight == 0 }
    }

    /// Waits until `condition` holds of the state (checked again after each part finishes).
    /// Cancelling the waiting task cancels the parts in flight, so the wait ends promptly.
    private func waitUntil(_ condition: @escaping @Sendable (State) -> Bool) async {
        while !state.withLock({ condition($0) }) {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state in
                        if condition(state) { return true }
                        state.waiters.append(continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                state.withLock { Array($0.cancellations.values) }.forEach { $0.cancel() }
            }
        }
    }

    /// CompleteMultipartUpload with every part's ETag; guarded against an existing object.
    func complete() async throws(ObjectStoreError) -> String? {
        let (uploadID, etags, count) = state.withLock { ($0.uploadID!, $0.etags, $0.nextPart - 1) }
        let ordered = (1...max(count, 1)).compactMap { etags[$0] }
        guard ordered.count == count else {
            throw ObjectStoreError(.invalidResponse, "\(location): \(count - ordered.count) of \(count) parts have no ETag")
        }
        do {
            return try await client.completeMultipartUpload(location, uploadID: uploadID, etags: ordered,
                                                            ifNoneMatch: guarding.sendsIfNoneMatch)
        } catch let error where error.code == .alreadyExists {
            throw guarding.exists()
        } catch let error where error.code == .notImplemented && guarding.sendsIfNoneMatch {
            if !guarding.headsFirst { try guarding.refuseIfPresent(await client.head(location)) }
            return try await client.completeMultipartUpload(location, uploadID: uploadID, etags: ordered, ifNoneMatch: false)
        }
    }

    /// Aborts and throws `.cancelled` when the calling task was cancelled.
    func checkCancellation() async throws(ObjectStoreError) {
        guard Task.isCancelled else { return }
        await abort()
        throw cancelledError()
    }

    func cancelledError() -> ObjectStoreError {
        ObjectStoreError(.cancelled, "writing \(location) was cancelled; nothing was written there")
    }

    func closedError(_ state: State) -> ObjectStoreError {
        switch state.phase {
        case .finished: ObjectStoreError(.writerClosed, "\(location) is already finished; open a new writer")
        case .aborted: ObjectStoreError(.writerClosed, "writing \(location) was aborted; nothing was written there")
        case .open, .finishing: ObjectStoreError(.writerClosed, "\(location) is being finished; write nothing more")
        }
    }
}
