"""Numbers the studies published, always drawn labelled as theirs."""
