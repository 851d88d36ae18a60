print("avatar-cropper")
