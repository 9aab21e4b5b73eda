"""Analysis of compiled programs: the profile of `atvoss profile`."""
