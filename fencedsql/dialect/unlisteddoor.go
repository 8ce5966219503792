package dialect

// SideDoorUnlisted: the side-door verdict is partial because the checking account
// cannot list every object that could be a door (schema.Check only; red-team rt61b
// F2). MySQL and MariaDB list a trigger in information_schema.TRIGGERS only to an
// account with TRIGGER on its table, an event only with EVENT on its database, a
// routine only to its definer or an account with a right on it (or that reads every
// routine): such an object in ANY database can write the table as its definer,
// unfenced, and the finders, which read the catalog, do not see it. The problem names
// the privileges that make the verdict whole; there is no Fix (granting is the DBA's
// call). Never a refusal of the pool: the lazy check does not look for it.
const SideDoorUnlisted SideDoorKind = "unlisted"
