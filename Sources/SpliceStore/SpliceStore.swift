/// SpliceStore: libpq in Swift, migrations and the job/segment repository.
public enum SpliceStore {}
