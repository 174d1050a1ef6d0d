import SpliceMedia
print("splice")
