/// Single-request object operations: HEAD, ranged GET, PUT (guarded against replacing an
/// existing object), DELETE, HEAD bucket.
extension S3Client {
    /// HEAD: the object's size and ETag, nil when there is no such object.
    func head(_ location: ObjectLocation) async throws(ObjectStoreError) -> ObjectInfo? {
        var request = S3Request("HeadObject", .head, bucket: location.bucket, key: location.key)
        request.accepting = [404]
        var explain = getRequest(location, range: 0..<1, etag: nil)
        explain.accepting = [404, 416]
        let response = try await sendHead(request, explainedBy: explain)
        return response.status == 404 ? nil : ObjectInfo(location: location, response: response)
    }

    /// HEAD bucket: succeeds when the bucket exists and the credentials may list it.
    func headBucket(_ bucket: String) async throws(ObjectStoreError) {
        var request = S3Request("HeadBucket", .head, bucket: bucket)
        request.accepting = [404]
        var explain = S3Request("HeadBucket", .get, bucket: bucket)
        explain.query = [("max-keys", "0")]
        let response = try await sendHead(request, explainedBy: explain)
        if response.status == 404 {
            // HEAD answers carry no body, so the mapper cannot read NoSuchBucket from it.
            throw ObjectStoreError(.noSuchBucket, "HeadBucket s3://\(bucket): bucket \(bucket) does not exist at "
                + "\(configuration.endpoint ?? "AWS S3 (region \(configuration.region))"); check the bucket name, "
                + "AWS_REGION and AWS_ENDPOINT_URL", httpStatus: 404)
        }
    }

    /// Sends a HEAD; when it is refused (4xx), asks `explain` — a GET of the same thing — why:
    /// HEAD answers carry no body, so a 403 could be an unknown key, a wrong secret, an expired
    /// token or a missing permission, and only the GET's error document says which.
    private func sendHead(_ request: S3Request, explainedBy explain: S3Request) async throws(ObjectStoreError) -> HTTPResponse {
        do {
            return try await send(request)
        } catch let error where error.httpStatus.map({ (400..<500).contains($0) }) == true && error.serviceCode == nil {
            var explain = explain
            explain.operation = request.operation
            do {
                _ = try await send(explain)
            } catch let reason where reason.serviceCode != nil {
                throw reason
            } catch {}
            throw error
        }
    }

    /// A GET of `range` (the whole object when nil), refused with `.objectChanged` when `etag`
    /// is given and the object's is different.
    func getRequest(_ location: ObjectLocation, range: Range<Int64>?, etag: String?) -> S3Request {
        var request = S3Request("GetObject", .get, bucket: location.bucket, key: location.key)
        if let range {
            request.headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)"))
            request.expectedResponseBytes = Int(range.count)
        }
        if let etag { request.headers.append(("If-Match", "\"\(etag)\"")) }
        return request
    }

    /// Turns a GET's 412 (If-Match failed) into `.objectChanged`; other errors pass through.
    static func readError(_ error: ObjectStoreError, _ location: ObjectLocation) -> ObjectStoreError {
        guard error.code == .alreadyExists else { return error }
        var changed = error
        changed.code = .objectChanged
        changed.message = "GetObject \(location): the object was replaced while it was being read; read it again"
        return changed
    }

    /// PUT `bytes` as `location`. Without `overwrite`, an existing object is refused with
    /// `.alreadyExists` (guarded as ``ObjectStoreConfiguration/ConditionalWrites`` says).
    func put(_ bytes: [UInt8], at location: ObjectLocation, overwrite: Bool, contentType: String?)
        async throws(ObjectStoreError) -> ObjectInfo
    {
        let guarding = WriteGuard(configuration: configuration, location: location, overwrite: overwrite)
        if guarding.headsFirst { try await guarding.refuseIfPresent(head(location)) }
        var request = S3Request("PutObject", .put, bucket: location.bucket, key: location.key)
        request.body = bytes
        request.signsPayload = false
        request.headers.append(("Content-Type", contentType ?? "application/octet-stream"))
        let plain = request
        if guarding.sendsIfNoneMatch { request.headers.append(("If-None-Match", "*")) }
        let response: HTTPResponse
        do {
            response = try await send(request)
        } catch let error where error.code == .alreadyExists {
            throw guarding.exists()
        } catch let error where error.code == .notImplemented && guarding.sendsIfNoneMatch {
            // The service does not do conditional writes: fall back to HEAD, then a plain PUT.
            if !guarding.headsFirst { try await guarding.refuseIfPresent(head(location)) }
            response = try await send(plain)
        }
        return ObjectInfo(location: location, size: Int64(bytes.count), etag: response.header("etag").map(ObjectInfo.unquoted),
                          contentType: contentType)
    }

    /// DELETE (deleting an object that is not there succeeds, as in S3).
    func delete(_ location: ObjectLocation) async throws(ObjectStoreError) {
        var request = S3Request("DeleteObject", .delete, bucket: location.bucket, key: location.key)
        request.accepting = [404]
        _ = try await send(request)
    }
}
