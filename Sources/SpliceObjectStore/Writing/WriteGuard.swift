/// How a write that must not replace an existing object is guarded, for one location.
struct WriteGuard: Sendable {
    let location: ObjectLocation
    /// HEAD before writing (a service that may ignore `If-None-Match`, or does not implement it).
    let headsFirst: Bool
    /// Send `If-None-Match: *` with the PUT or the multipart completion.
    let sendsIfNoneMatch: Bool

    init(configuration: ObjectStoreConfiguration, location: ObjectLocation, overwrite: Bool) {
        self.location = location
        switch (overwrite, configuration.conditionalWrites) {
        case (true, _):
            (headsFirst, sendsIfNoneMatch) = (false, false)
        case (false, .ifNoneMatch):
            (headsFirst, sendsIfNoneMatch) = (false, true)
        case (false, .headThenWrite):
            (headsFirst, sendsIfNoneMatch) = (true, false)
        case (false, .automatic):
            (headsFirst, sendsIfNoneMatch) = (!configuration.isAWS, true)
        }
    }

    /// Whether anything guards the write at all.
    var isGuarded: Bool { headsFirst || sendsIfNoneMatch }

    /// Throws `.alreadyExists` when HEAD found an object.
    func refuseIfPresent(_ info: ObjectInfo?) throws(ObjectStoreError) {
        if info != nil { throw exists() }
    }

    /// The error for an object that is there and may not be replaced.
    func exists() -> ObjectStoreError {
        ObjectStoreError(.alreadyExists, "\(location) already exists; ask for overwrite (-y, --overwrite) to replace it")
    }
}
