/* The library missing_dep.c links against; built away from every plugin
 * directory and never put on the loader's path. */
int sexpgpu_missing_dep_value(void);
int sexpgpu_missing_dep_value(void) {
  return 1;
}
