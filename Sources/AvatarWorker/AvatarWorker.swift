// AvatarWorker: see DESIGN §6.
