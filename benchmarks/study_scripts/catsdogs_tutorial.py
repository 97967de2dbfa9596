"""The cats-vs-dogs CNN of the tutorial study 004 follows (Venkatesh Tata, "Simple Image
Classification using Convolutional Neural Network - Deep Learning in python", Becoming
Human, 2017; the post shows its network only as a figure), for Keras 3.

The tutorial: a Sequential network (conv 3x3x32 ReLU on 64x64x3, max-pool 2, conv 3x3x32
ReLU, max-pool 2, flatten, dense 128 ReLU, dense 1 sigmoid) compiled with ``adam`` and
binary cross-entropy; ``ImageDataGenerator(rescale=1./255, shear_range=0.2, zoom_range=0.2,
horizontal_flip=True)`` and ``flow_from_directory('dataset/training_set', target_size=(64,
64), batch_size=32, class_mode='binary')`` for training, ``rescale`` only for
'dataset/test_set'; ``fit_generator(training_set, steps_per_epoch=8000, epochs=25,
validation_data=test_set, validation_steps=2000)``.

What differs from the tutorial, and why:
* Keras 3 has no ``ImageDataGenerator``. Its closest equivalent:
  ``keras.utils.image_dataset_from_directory`` (the same ``<folder>/<class>/`` layout,
  labels by class folder in alphabetical order, ``label_mode="binary"``, shuffled; resized
  with "nearest", as Keras 2's ``load_img``) mapped through Keras 3's preprocessing layers
  in the input pipeline, where the generator transformed each batch: ``Rescaling(1/255)``,
  ``RandomShear`` (Keras 2 read ``shear_range=0.2`` as degrees: a shear of tan 0.2 deg),
  ``RandomZoom(0.2, 0.2)`` (x and y drawn apart from 0.8-1.2, as Keras 2) and
  ``RandomFlip("horizontal")``; Keras 2's default fill, "nearest", for both transforms.
* ``fit_generator`` is ``fit``. Keras 2's generators looped for ever; a Keras 3 dataset ends,
  so it is repeated where ``steps_per_epoch`` / ``validation_steps`` are set.
* ``steps_per_epoch=8000``, ``epochs=25``, ``validation_steps=2000`` and the two folders:
  ``_study.setting(...)`` (the benchmark: one pass over its folders an epoch, its epochs).
* ``input_shape`` on the first layer is kept (Keras 3 warns, prefers an ``Input``).
"""

import math

import _study
import keras
from keras.layers import Conv2D, Dense, Flatten, MaxPooling2D
from keras.models import Sequential

classifier = Sequential()
classifier.add(Conv2D(32, (3, 3), input_shape=(64, 64, 3), activation="relu"))
classifier.add(MaxPooling2D(pool_size=(2, 2)))
classifier.add(Conv2D(32, (3, 3), activation="relu"))
classifier.add(MaxPooling2D(pool_size=(2, 2)))
classifier.add(Flatten())
classifier.add(Dense(units=128, activation="relu"))
classifier.add(Dense(units=1, activation="sigmoid"))
classifier.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])

train_datagen = keras.Sequential(
    [
        keras.layers.Rescaling(1.0 / 255),
        keras.layers.RandomShear(x_factor=math.tan(math.radians(0.2)), fill_mode="nearest"),
        keras.layers.RandomZoom(0.2, 0.2, fill_mode="nearest"),
        keras.layers.RandomFlip("horizontal"),
    ]
)
test_datagen = keras.layers.Rescaling(1.0 / 255)


def flow_from_directory(folder, datagen):
    images = keras.utils.image_dataset_from_directory(
        folder,
        image_size=(64, 64),
        batch_size=32,
        label_mode="binary",
        interpolation="nearest",
    )
    return images.map(lambda x, y: (datagen(x, training=True), y))


steps_per_epoch = _study.setting("steps_per_epoch", 8000)
validation_steps = _study.setting("validation_steps", 2000)
training_set = flow_from_directory(
    _study.setting("training_set", "dataset/training_set"), train_datagen
)
test_set = flow_from_directory(_study.setting("test_set", "dataset/test_set"), test_datagen)
if steps_per_epoch:
    training_set = training_set.repeat()
if validation_steps:
    test_set = test_set.repeat()

classifier.fit(
    training_set,
    steps_per_epoch=steps_per_epoch,
    epochs=_study.setting("epochs", 25),
    validation_data=test_set,
    validation_steps=validation_steps,
)
