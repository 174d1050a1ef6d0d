/// Turns an S3 answer or a transport failure into an ``ObjectStoreError`` for people: which
/// operation on which bucket and key, what the service said, what to do, whether to retry.
struct S3ErrorMapper: Sendable {
    let configuration: ObjectStoreConfiguration

    /// The error for a non-2xx answer (or a 200 whose body is an `<Error>`, as
    /// CompleteMultipartUpload may send).
    func error(for response: HTTPResponse, of request: S3Request) -> ObjectStoreError {
        let xml = S3XML(response.body)
        let serviceCode = xml.rootName == "Error" ? xml.value("Code") : nil
        let serviceMessage = xml.rootName == "Error" ? xml.value("Message") : nil
        let said = serviceMessage.map { ": \"\($0)\"" } ?? ""
        let what = "\(request.operation) \(request.target)"
        func make(_ code: ObjectStoreError.Code, _ message: String, retry: Bool = false) -> ObjectStoreError {
            ObjectStoreError(code, message, isRetryable: retry, httpStatus: response.status, serviceCode: serviceCode)
        }
        switch (response.status, serviceCode) {
        case (_, "NoSuchBucket"):
            return make(.noSuchBucket, "\(what): bucket \(request.bucket) does not exist at \(where_); check the bucket "
                + "name, AWS_REGION and AWS_ENDPOINT_URL")
        case (_, "NoSuchUpload"):
            return make(.notFound, "\(what): the multipart upload is gone (completed or aborted elsewhere)")
        case (404, _):
            return make(.notFound, "\(what): no such object\(said); check the key")
        case (_, "AuthorizationHeaderMalformed") where region(in: response, xml) == nil,
             (_, "InvalidAccessKeyId"), (_, "SignatureDoesNotMatch"), (_, "ExpiredToken"), (_, "InvalidToken"),
             (_, "TokenRefreshRequired"):
            return make(.invalidCredentials, "\(what): the service refused \(whose) (\(serviceCode ?? "?"))\(said); "
                + credentialsAdvice(serviceCode))
        case (301, _), (307, _), (400, "AuthorizationHeaderMalformed"), (400, "IllegalLocationConstraintException"):
            let actual = region(in: response, xml).map { "region \($0)" } ?? "another region"
            return make(.wrongRegion, "\(what): bucket \(request.bucket) is in \(actual), requests were signed for "
                + "\(configuration.region); set AWS_REGION=\(region(in: response, xml) ?? "<the bucket's region>")")
        case (403, _):
            if configuration.credentials == nil {
                return make(.accessDenied, "\(what): access denied to unsigned requests\(said); set AWS_ACCESS_KEY_ID and "
                    + "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE")
            }
            return make(.accessDenied, "\(what): \(whose) may not do this\(said); allow s3:\(action(request)) on "
                + "arn:aws:s3:::\(request.bucket)/\(request.key.isEmpty ? "*" : request.key) in its policy")
        case (412, _):
            return make(.alreadyExists, "\(what): precondition failed\(said)")
        case (416, _):
            return make(.invalidRange, "\(what): the range asked for starts beyond the object's end\(said)")
        case (501, _):
            return make(.notImplemented, "\(what): the service does not implement this request\(said)")
        case (400, "RequestTimeout"), (409, "ConditionalRequestConflict"), (408, _), (429, _), (500..., _), (200, _):
            return make(.serviceUnavailable, "\(what): HTTP \(response.status) \(serviceCode ?? "")\(said); the service "
                + "is failing or overloaded, try again later", retry: true)
        case (400, "RequestTimeTooSkewed"):
            return make(.requestRejected, "\(what): this machine's clock is too far from the service's\(said); "
                + "synchronise it (NTP)")
        default:
            return make(.requestRejected, "\(what): HTTP \(response.status) \(serviceCode ?? "")\(said)")
        }
    }

    /// The error for a transfer that got no answer.
    func error(for failure: TransportFailure, of request: S3Request) -> ObjectStoreError {
        let what = "\(request.operation) \(request.target)"
        switch failure.kind {
        case .cancelled:
            return ObjectStoreError(.cancelled, "\(what): cancelled")
        case .timeout:
            return ObjectStoreError(.timedOut, "\(what): \(where_) stopped answering (\(failure.message)); check the "
                + "network and AWS_ENDPOINT_URL", isRetryable: true)
        case .connection:
            return ObjectStoreError(.connectionFailed, "\(what): cannot reach \(where_) (\(failure.message)); check the "
                + "network and AWS_ENDPOINT_URL", isRetryable: true)
        case .permanent:
            return ObjectStoreError(.connectionFailed, "\(what): \(failure.message) (curl error \(failure.curlCode))")
        }
    }

    // MARK: - Wording

    private var where_: String {
        configuration.endpoint ?? "AWS S3 (region \(configuration.region))"
    }

    private var whose: String {
        configuration.credentials?.description ?? "unsigned requests"
    }

    private func credentialsAdvice(_ code: String?) -> String {
        switch code {
        case "SignatureDoesNotMatch": "the secret key does not belong to this access key: check AWS_SECRET_ACCESS_KEY "
            + "(or the profile's aws_secret_access_key)"
        case "ExpiredToken", "TokenRefreshRequired": "the session token has expired: fetch new temporary credentials"
        case "InvalidToken": "the session token is not valid for this access key: check AWS_SESSION_TOKEN"
        default: "the service does not know this access key: check AWS_ACCESS_KEY_ID or AWS_PROFILE, and that "
            + "AWS_ENDPOINT_URL points at the service the key belongs to"
        }
    }

    /// The region the service says the bucket is in, if it says.
    private func region(in response: HTTPResponse, _ xml: S3XML) -> String? {
        response.header("x-amz-bucket-region") ?? xml.value("Region")
    }

    /// The IAM action for `request`, for access-denied advice.
    private func action(_ request: S3Request) -> String {
        switch request.operation {
        case "HeadObject": "GetObject"
        case "HeadBucket": "ListBucket"
        case "ListMultipartUploads": "ListBucketMultipartUploads"
        case "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload": "PutObject"
        default: request.operation
        }
    }
}
