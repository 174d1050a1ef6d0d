internal import Dispatch
internal import Foundation
internal import Glibc
internal import SpliceMedia

/// The folders a remote client may name in SUBMIT (`--input-root`, `--output-root`): with any
/// set, a path is admitted only when it lies inside one of them once every symbolic link is
/// resolved — so an API key cannot make the coordinator read its own key files or overwrite its
/// own database through a link or a `..`. No roots: every path is admitted (the default, for a
/// single user's machine; docs/deploy.md recommends roots for a shared cluster).
///
/// A root may also be an object prefix (`s3://bucket/prefix`): an object location is admitted
/// only inside one of those (keys are names, not paths: nothing is resolved), so a key or token
/// can be confined to a prefix. With roots of one kind only, a location of the other kind is refused.
struct PathRoots: Sendable, Hashable {
    /// The folder roots, resolved.
    let roots: [String]
    /// The object roots, as given.
    let objectRoots: [String]

    /// Resolves each folder root (it must exist and be a folder); checks each object root.
    init(_ paths: [String], flag: String) throws {
        var resolved: [String] = []
        var objects: [String] = []
        for path in paths {
            if StorageRegistry.isStored(path) {
                guard let storage = try StorageRegistry.storage(for: path), storage.isWithin(path, root: path) else {
                    throw CoordinatorError(.invalidConfiguration, "\(flag) \(path) is not an object prefix; write s3://BUCKET/PREFIX")
                }
                objects.append(path)
                continue
            }
            guard let real = Self.realPath(path) else {
                throw CoordinatorError(.invalidConfiguration, "\(flag) \(path) does not exist; create it or fix the path")
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CoordinatorError(.invalidConfiguration, "\(flag) \(path) is not a folder")
            }
            resolved.append(real)
        }
        roots = resolved
        objectRoots = objects
    }

    var isEmpty: Bool { roots.isEmpty && objectRoots.isEmpty }

    /// Every root, for messages.
    var described: String { (roots + objectRoots).joined(separator: ", ") }

    /// Whether the object at `location` lies under an object root (`storage` says how its keys nest).
    func admits(object location: String, in storage: any MediaStorage) -> Bool {
        objectRoots.contains { storage.isWithin(location, root: $0) }
    }

    /// Roots already resolved (a token's, resolved when it was made); no object roots.
    init(resolved: [String]) {
        roots = resolved
        objectRoots = []
    }

    /// No roots: every path.
    static let none = PathRoots(resolved: [])

    /// Whether `resolved` (an absolute path without links) is one of the roots or inside one.
    func contains(resolved path: String) -> Bool {
        roots.isEmpty || roots.contains { root in
            path == root || path.hasPrefix(root == "/" ? "/" : root + "/")
        }
    }

    /// The path with every link resolved, or nil when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Where writing `path` would land: the file itself resolved when it exists (a link is
    /// followed), else its folder resolved plus its name; nil when the folder does not exist.
    static func resolvedOutput(_ path: String) -> String? {
        if let real = realPath(path) { return real }
        let url = URL(fileURLWithPath: path)
        guard let folder = realPath(url.deletingLastPathComponent().path) else { return nil }
        return (folder == "/" ? "" : folder) + "/" + url.lastPathComponent
    }
}

/// Runs file-system checks off Swift's cooperative pool: the paths a client names may be on NFS.
enum FileSystemQueue {
    private static let queue = DispatchQueue(label: "splice.coordinator.paths")

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
