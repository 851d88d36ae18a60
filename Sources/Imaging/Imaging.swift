// Imaging: see DESIGN §6.
