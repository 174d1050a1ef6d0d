print("splice-bench")
