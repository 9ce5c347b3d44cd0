"""Where a corpus comes from, behind one interface: the checkout, synced repositories, the shared table."""
