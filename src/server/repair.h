/*
 * repair.h - `gpulse repair --data DIR`: checks a stopped server's data
 * directory and rebuilds what can be rebuilt (docs/storage.md "Damage
 * and repair", man gpulse-repair(1)).
 */
#ifndef GP_SERVER_REPAIR_H
#define GP_SERVER_REPAIR_H

/* argv after "repair". Exit status: 0 all fine or repaired, 1 something
 * could not be repaired (or the directory is in use), 2 usage. */
int gp_repair_main(int argc, char **argv);

#endif
