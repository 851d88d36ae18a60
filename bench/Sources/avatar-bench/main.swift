print("avatar-bench")
