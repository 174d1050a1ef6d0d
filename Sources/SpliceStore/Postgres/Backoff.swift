public import SpliceConcurrency

/// The store's retry delays are ``SpliceConcurrency/Backoff``, which now lives beside the other
/// shared primitives (the object store retries with it too); this name keeps `SpliceStore.Backoff`
/// working for the modules that import only the store.
public typealias Backoff = SpliceConcurrency.Backoff
