/// SpliceCluster: the coordinator and worker services (state machines and their shells).
public enum SpliceCluster {}
