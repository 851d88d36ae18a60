// Messaging: see DESIGN §6.
