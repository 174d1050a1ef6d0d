internal import Foundation
internal import Glibc
internal import SpliceMedia
internal import SpliceWire

/// The checks a job's input and output pass before the coordinator accepts it, whatever API
/// the job comes through (the ZeroMQ SUBMIT today; an HTTP API calls the same): both inside the
/// configured roots, the input there to read, the output writable and not there yet unless
/// `overwrite`. Paths are checked on the file system (links resolved); object locations
/// (`s3://BUCKET/KEY`) through the storage SpliceMedia has registered — a HEAD of the input, the
/// output's bucket with these credentials and a HEAD of the output — so a wrong key, a missing
/// bucket or an existing object is refused in a few round trips, not after the job is encoded.
struct JobLocations: Sendable {
    let inputRoots: PathRoots
    let outputRoots: PathRoots

    /// Nil when the job may be created, else why not; runs off Swift's cooperative pool (the
    /// paths may be on NFS, the objects behind a network).
    func refusal(input: String, output: String, overwrite: Bool) async throws -> Refusal? {
        let (inputRoots, outputRoots) = (self.inputRoots, self.outputRoots)
        return try await FileSystemQueue.run {
            do {
                return try Self.check(input: input, output: output, overwrite: overwrite, inputRoots: inputRoots,
                                      outputRoots: outputRoots)
            } catch let error as MediaError where error.code == .outputExists {
                return Refusal(.outputExists, "`output` \(output) already exists and `export.overwrite` is false; set it "
                    + "to true to replace it, or choose another output")
            } catch let error as MediaError {
                return Refusal(.invalidRequest, error.message)
            }
        }
    }

    private static func check(input: String, output: String, overwrite: Bool, inputRoots: PathRoots,
                              outputRoots: PathRoots) throws -> Refusal? {
        let inputStorage = try StorageRegistry.storage(for: input)
        let isWebURL = inputStorage == nil && SourceProtocols.isURL(input)
        // A web URL is opened (and its failure reported) when the job is planned; the roots are for
        // paths and objects.
        if !inputRoots.isEmpty && !isWebURL {
            let admitted = if let inputStorage {
                inputRoots.admits(object: input, in: inputStorage)
            } else {
                PathRoots.realPath(input).map { inputRoots.contains(resolved: $0) && !inputRoots.roots.isEmpty } ?? false
            }
            guard admitted else {
                return Refusal(.invalidRequest, "`input` \(input) is not inside an input root of this coordinator ("
                    + inputRoots.described + ")")
            }
        }
        let outputStorage = try StorageRegistry.storage(for: output)
        if !outputRoots.isEmpty {
            let admitted = if let outputStorage {
                outputRoots.admits(object: output, in: outputStorage)
            } else {
                PathRoots.resolvedOutput(output).map { outputRoots.contains(resolved: $0) && !outputRoots.roots.isEmpty }
                    ?? false
            }
            guard admitted else {
                return Refusal(.invalidRequest, "`output` \(output) is not inside an output root of this coordinator ("
                    + outputRoots.described + ")")
            }
        }
        if let inputStorage {
            do {
                try inputStorage.checkInput(input)
            } catch {
                return Refusal(.invalidRequest, "`input` \(input) cannot be read by the coordinator: \(error.message)")
            }
        } else if !isWebURL {
            // Non-blocking: a FIFO named as the input must not hold every submission's check.
            let fd = open(input, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            guard fd >= 0 else {
                let reason = String(cString: strerror(errno))
                return Refusal(.invalidRequest, "`input` \(input) cannot be read by the coordinator (\(reason)); the "
                    + "coordinator and the workers must see it at this path")
            }
            close(fd)
        }
        let refused: MediaError?
        do {
            try OutputDestination.check(output: output, inputs: isWebURL ? [] : [input], overwrite: overwrite)
            refused = nil
        } catch {
            refused = error
        }
        guard let refused else { return nil }
        // A path's refusal names the path already; a storage's names the request it made.
        guard outputStorage != nil, refused.code != .outputExists else { throw refused }
        return Refusal(.invalidRequest, "`output` \(output) cannot be written by the coordinator: \(refused.message)")
    }
}

/// Why the coordinator refuses a job's files, with the code its ERROR carries.
struct Refusal: Sendable {
    let code: APIError.Code
    let message: String

    init(_ code: APIError.Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
