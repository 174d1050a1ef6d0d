/// Helpers shared by the integration test targets.
public enum SpliceTestSupport {}
