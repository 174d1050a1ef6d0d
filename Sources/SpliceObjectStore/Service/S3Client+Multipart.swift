/// The multipart upload requests: create, upload a part, complete, abort, list.
extension S3Client {
    /// CreateMultipartUpload: the new upload's id.
    func createMultipartUpload(_ location: ObjectLocation, contentType: String?) async throws(ObjectStoreError) -> String {
        var request = S3Request("CreateMultipartUpload", .post, bucket: location.bucket, key: location.key)
        request.query = [("uploads", "")]
        request.headers.append(("Content-Type", contentType ?? "application/octet-stream"))
        let response = try await send(request)
        guard let uploadID = S3XML(response.body).value("UploadId"), !uploadID.isEmpty else {
            throw ObjectStoreError(.invalidResponse, "CreateMultipartUpload \(location): the answer has no UploadId",
                                   httpStatus: response.status)
        }
        return uploadID
    }

    /// The UploadPart request for part `number` (1-based) of `uploadID`.
    func uploadPartRequest(_ location: ObjectLocation, uploadID: String, number: Int, bytes: [UInt8]) -> S3Request {
        var request = S3Request("UploadPart", .put, bucket: location.bucket, key: location.key)
        request.query = [("partNumber", String(number)), ("uploadId", uploadID)]
        request.body = bytes
        request.signsPayload = false
        return request
    }

    /// CompleteMultipartUpload with `etags` in part order; with `ifNoneMatch`, refused (412) when
    /// the key exists by then. Returns the new object's ETag.
    func completeMultipartUpload(_ location: ObjectLocation, uploadID: String, etags: [String], ifNoneMatch: Bool)
        async throws(ObjectStoreError) -> String?
    {
        var request = S3Request("CompleteMultipartUpload", .post, bucket: location.bucket, key: location.key)
        request.query = [("uploadId", uploadID)]
        request.headers.append(("Content-Type", "application/xml"))
        if ifNoneMatch { request.headers.append(("If-None-Match", "*")) }
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (index, etag) in etags.enumerated() {
            xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(S3XML.escape("\"\(etag)\""))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        request.body = Array(xml.utf8)
        let response = try await send(request)
        return S3XML(response.body).value("ETag").map(ObjectInfo.unquoted)
    }

    /// The AbortMultipartUpload request (an upload already gone counts as aborted).
    func abortRequest(_ location: ObjectLocation, uploadID: String) -> S3Request {
        var request = S3Request("AbortMultipartUpload", .delete, bucket: location.bucket, key: location.key)
        request.query = [("uploadId", uploadID)]
        request.accepting = [404]
        return request
    }

    /// Every unfinished multipart upload in `bucket` whose key starts with `prefix`, following
    /// the listing's pages.
    func listMultipartUploads(bucket: String, prefix: String) async throws(ObjectStoreError) -> [MultipartUploadInfo] {
        var uploads: [MultipartUploadInfo] = []
        var markers: (key: String, upload: String)?
        while true {
            var request = S3Request("ListMultipartUploads", .get, bucket: bucket)
            request.query = [("uploads", "")]
            if !prefix.isEmpty { request.query.append(("prefix", prefix)) }
            if let markers {
                request.query += [("key-marker", markers.key), ("upload-id-marker", markers.upload)]
            }
            let xml = S3XML(try await send(request).body)
            for record in xml.records("Upload") {
                guard let key = record.value("Key"), let id = record.value("UploadId") else { continue }
                let location = try ObjectLocation(bucket: bucket, key: key)
                uploads.append(MultipartUploadInfo(location: location, uploadID: id, initiated: record.value("Initiated")))
            }
            guard xml.value("IsTruncated") == "true", let key = xml.value("NextKeyMarker"),
                  let upload = xml.value("NextUploadIdMarker") else { return uploads }
            markers = (key, upload)
        }
    }
}
