// Database: see DESIGN §6.
