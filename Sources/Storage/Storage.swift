// Storage: see DESIGN §6.
