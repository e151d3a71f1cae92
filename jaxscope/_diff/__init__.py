"""Program diffs aligned to the user's source lines (``js.diff``, ``%jaxdiff``)."""
