"""Which logical ports live on this chassis: claiming, incremental rebinding, interface status, local datapaths and conntrack zones."""
